import NIOCore
import TokenVaultCore

/// Writes credential metadata (`CredentialMetadataDocument`) and pages of it byte for byte as
/// `JSONEncoder` with `.sortedKeys` and `.withoutEscapingSlashes` writes them, without an
/// encoder: the encoder built a dictionary per object, sorted its keys and boxed every value,
/// about 20 µs per credential (a page of 50 cost over a millisecond of CPU). The keys below are
/// in sorted order; absent optionals are left out, as the synthesized `Encodable` leaves them.
/// `MetadataJSONTests` compares the two over many shapes.
enum MetadataJSON {
    /// One credential's document.
    static func document(_ metadata: CredentialMetadata, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 640)
        write(metadata, to: &buffer)
        return buffer
    }

    /// `{"items": [...], "next_cursor": ...}` (`PageDocument`; the cursor is `null` at the end).
    static func page(_ items: [CredentialMetadata], nextCursor: String?, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 64 + 640 * items.count)
        buffer.writeStaticString("{\"items\":[")
        for (index, metadata) in items.enumerated() {
            if index > 0 { buffer.writeStaticString(",") }
            write(metadata, to: &buffer)
        }
        buffer.writeStaticString("],\"next_cursor\":")
        if let nextCursor { string(nextCursor, to: &buffer) } else { buffer.writeStaticString("null") }
        buffer.writeStaticString("}")
        return buffer
    }

    static func write(_ metadata: CredentialMetadata, to buffer: inout ByteBuffer) {
        buffer.writeStaticString("{\"created_at\":")
        string(metadata.createdAt.description, to: &buffer)
        if let expiresAt = metadata.expiresAt {
            buffer.writeStaticString(",\"expires_at\":")
            string(expiresAt.description, to: &buffer)
        }
        buffer.writeStaticString(",\"generation\":")
        buffer.writeString(String(metadata.generation))
        buffer.writeStaticString(metadata.hasIDToken ? ",\"has_id_token\":true" : ",\"has_id_token\":false")
        buffer.writeStaticString(
            metadata.hasRefreshToken ? ",\"has_refresh_token\":true" : ",\"has_refresh_token\":false")
        buffer.writeStaticString(",\"id\":")
        string(metadata.id.description, to: &buffer)
        buffer.writeStaticString(",\"issued_at\":")
        string(metadata.issuedAt.description, to: &buffer)
        buffer.writeStaticString(",\"kind\":")
        string(metadata.kind.rawValue, to: &buffer)
        buffer.writeStaticString(",\"labels\":{")
        // The encoder's order: by UTF-8 bytes (not `String`'s `<`, which compares canonical forms).
        for (index, key) in metadata.labels.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) })
            .enumerated()
        {
            if index > 0 { buffer.writeStaticString(",") }
            string(key, to: &buffer)
            buffer.writeStaticString(":")
            string(metadata.labels[key] ?? "", to: &buffer)
        }
        buffer.writeStaticString("}")
        if let failure = metadata.lastError {
            buffer.writeStaticString(",\"last_error\":{\"at\":")
            string(failure.at.description, to: &buffer)
            buffer.writeStaticString(",\"code\":")
            string(failure.code, to: &buffer)
            buffer.writeStaticString(",\"message\":")
            string(failure.message, to: &buffer)
            buffer.writeStaticString("}")
        }
        buffer.writeStaticString(",\"name\":")
        string(metadata.id.name, to: &buffer)
        buffer.writeStaticString(",\"namespace\":")
        string(metadata.id.namespace, to: &buffer)
        if let pending = metadata.pendingCommit {
            buffer.writeStaticString(",\"pending_commit\":{\"failures\":")
            buffer.writeString(String(pending.failures))
            buffer.writeStaticString(",\"last_error\":")
            string(pending.lastError, to: &buffer)
            buffer.writeStaticString(",\"next_attempt_at\":")
            string(pending.nextAttemptAt.description, to: &buffer)
            buffer.writeStaticString(",\"since\":")
            string(pending.since.description, to: &buffer)
            buffer.writeStaticString("}")
        }
        buffer.writeStaticString(",\"provider\":")
        string(metadata.provider, to: &buffer)
        if let refreshAt = metadata.refreshAt {
            buffer.writeStaticString(",\"refresh_at\":")
            string(refreshAt.description, to: &buffer)
        }
        buffer.writeStaticString(",\"refresh_failures\":")
        buffer.writeString(String(metadata.refreshFailures))
        if let refreshTokenExpiresAt = metadata.refreshTokenExpiresAt {
            buffer.writeStaticString(",\"refresh_token_expires_at\":")
            string(refreshTokenExpiresAt.description, to: &buffer)
        }
        buffer.writeStaticString(",\"scopes\":[")
        for (index, scope) in metadata.scopes.enumerated() {
            if index > 0 { buffer.writeStaticString(",") }
            string(scope, to: &buffer)
        }
        buffer.writeStaticString("],\"status\":")
        string(metadata.status.rawValue, to: &buffer)
        if let subject = metadata.subject {
            buffer.writeStaticString(",\"subject\":")
            string(subject, to: &buffer)
        }
        if let tokenType = metadata.tokenType {
            buffer.writeStaticString(",\"token_type\":")
            string(tokenType, to: &buffer)
        }
        buffer.writeStaticString(",\"updated_at\":")
        string(metadata.updatedAt.description, to: &buffer)
        buffer.writeStaticString("}")
    }

    /// A JSON string, by the one string writer (`TokenJSON`'s).
    private static func string(_ text: String, to buffer: inout ByteBuffer) {
        var text = text
        text.withUTF8 { TokenJSON.writeString(UnsafeRawBufferPointer($0), to: &buffer) }
    }
}
