import Foundation
import Hummingbird
import NIOCore
import TokenVaultCore

/// NDJSON streams: `GET .../watch` (one credential's metadata document at once, then again on
/// each change; the stream ends when the credential is deleted) and `GET /v1/events` (an
/// `EventDocument` per change of any credential the caller may list). Never a token. Streams
/// also end when the client goes away or the daemon shuts down.
extension VaultAPI {
    func watch(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        _ = try await authorise(context, .credentialList, id: id, operation: "credential.watch")
        // Subscribe before reading the state, so no change falls between the two.
        let events = vault.events.subscribe(to: id)
        let current = try await blocking { try vault.metadata(id) }
        return ndjson { writer in
            try await writer.write(Self.line(CredentialMetadataDocument(current)))
            var last = current
            for await event in events {
                if event.kind == .deleted { break }
                guard let metadata = event.metadata, !Self.sameState(metadata, last) else { continue }
                try await writer.write(Self.line(CredentialMetadataDocument(metadata)))
                last = metadata
            }
        }
    }

    /// Events of every credential in the namespaces where the caller holds `credential:list`.
    func eventStream(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let visible = try await authoriseEventStream(context)
        let events = vault.events.subscribe()
        return ndjson { writer in
            for await event in events where visible?.contains(event.id.namespace) ?? true {
                guard let document = EventDocument(event) else { continue }
                try await writer.write(Self.line(document))
            }
        }
    }

    private func ndjson(_ body: @escaping @Sendable (inout any ResponseBodyWriter) async throws -> Void) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/x-ndjson", .cacheControl: "no-store"],
            body: ResponseBody { writer in
                try await body(&writer)
                try await writer.finish(nil)
            })
    }

    /// A change a watcher has already seen (same generation, status and error) is not repeated.
    static func sameState(_ a: CredentialMetadata, _ b: CredentialMetadata) -> Bool {
        a.generation == b.generation && a.status == b.status && a.lastError?.code == b.lastError?.code
    }

    static func line(_ document: some Encodable) throws -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var bytes = try encoder.encode(document)
        bytes.append(UInt8(ascii: "\n"))
        return ByteBuffer(bytes: bytes)
    }
}
