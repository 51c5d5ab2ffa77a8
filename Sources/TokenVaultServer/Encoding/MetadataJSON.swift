import NIOCore
import TokenVaultCore

/// The one spelling of credential metadata in JSON (a credential's document, pages of the
/// listing, stream lines, the exchange's answer), written byte for byte as `JSONEncoder` with
/// `.sortedKeys` and `.withoutEscapingSlashes` would write the Codable model docs/openapi.yaml
/// describes, without an encoder: the encoder built a dictionary per object, sorted its keys
/// and boxed every value, about 20 µs per credential (a page of 50 cost over a millisecond of
/// CPU). The keys below are in sorted order; absent optionals are left out, as a synthesized
/// `Encodable` leaves them. `MetadataJSONTests` checks it against that model
/// (`CredentialMetadataDocument`, in the tests) field by field over many shapes.
enum MetadataJSON {
    /// One credential's document.
    static func document(_ metadata: CredentialMetadata, allocator: ByteBufferAllocator) -> ByteBuffer {
        let bound = bound(metadata)
        var buffer = allocator.buffer(capacity: bound)
        buffer.writeJSON(reserving: bound) { write(metadata, to: &$0) }
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
        buffer.writeJSON(reserving: bound(metadata)) { write(metadata, to: &$0) }
    }

    /// The most bytes `write` takes for `metadata`: the keys and punctuation (under 512 bytes),
    /// and each value at its longest.
    static func bound(_ metadata: CredentialMetadata) -> Int {
        var strings =
            metadata.provider.utf8.count + metadata.kind.rawValue.utf8.count + metadata.status.rawValue.utf8.count
            + (metadata.subject?.utf8.count ?? 0) + (metadata.tokenType?.utf8.count ?? 0)
        for (key, value) in metadata.labels { strings += key.utf8.count + value.utf8.count + 4 }
        for scope in metadata.scopes { strings += scope.utf8.count + 2 }
        if let failure = metadata.lastError { strings += failure.code.utf8.count + failure.message.utf8.count }
        if let pending = metadata.pendingCommit { strings += pending.lastError.utf8.count }
        if let grant = metadata.grant {
            let values = grant.scopes + grant.audiences + grant.resources + [grant.requestedTokenType ?? ""]
            for value in values { strings += value.utf8.count + 2 }
            if let subject = grant.subject { strings += subject.description.utf8.count * 2 }
        }
        let id = 2 * (metadata.id.namespace.utf8.count + metadata.id.name.utf8.count) + 8
        return 512 + 6 * strings + id + 10 * JSONBytes.timestampBound + 3 * JSONBytes.numberBound
    }

    static func write(_ metadata: CredentialMetadata, to json: inout JSONBytes) {
        json.raw("{\"created_at\":")
        json.timestamp(metadata.createdAt)
        if let expiresAt = metadata.expiresAt {
            json.raw(",\"expires_at\":")
            json.timestamp(expiresAt)
        }
        json.raw(",\"generation\":")
        json.integer(metadata.generation)
        if let grant = metadata.grant {
            json.raw(",\"grant\":{\"audience\":")
            json.strings(grant.audiences)
            if let requested = grant.requestedTokenType {
                json.raw(",\"requested_token_type\":")
                json.string(requested)
            }
            json.raw(",\"resource\":")
            json.strings(grant.resources)
            json.raw(",\"scopes\":")
            json.strings(grant.scopes)
            if let subject = grant.subject {
                json.raw(",\"subject\":")
                json.string(subject)
            }
            json.raw(",\"type\":")
            json.string(grant.type.rawValue)
            json.raw("}")
        }
        json.raw(metadata.hasIDToken ? ",\"has_id_token\":true" : ",\"has_id_token\":false")
        json.raw(metadata.hasRefreshToken ? ",\"has_refresh_token\":true" : ",\"has_refresh_token\":false")
        json.raw(",\"id\":")
        json.string(metadata.id)
        json.raw(",\"issued_at\":")
        json.timestamp(metadata.issuedAt)
        json.raw(",\"kind\":")
        json.string(metadata.kind.rawValue)
        json.raw(",\"labels\":{")
        // The encoder's order: by UTF-8 bytes (not `String`'s `<`, which compares canonical forms).
        for (index, key) in metadata.labels.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) })
            .enumerated()
        {
            if index > 0 { json.raw(",") }
            json.string(key)
            json.raw(":")
            json.string(metadata.labels[key] ?? "")
        }
        json.raw("}")
        if let failure = metadata.lastError {
            json.raw(",\"last_error\":{\"at\":")
            json.timestamp(failure.at)
            json.raw(",\"code\":")
            json.string(failure.code)
            json.raw(",\"message\":")
            json.string(failure.message)
            json.raw("}")
        }
        json.raw(",\"name\":")
        json.string(metadata.id.name)
        json.raw(",\"namespace\":")
        json.string(metadata.id.namespace)
        if let pending = metadata.pendingCommit {
            json.raw(",\"pending_commit\":{\"failures\":")
            json.integer(pending.failures)
            json.raw(",\"last_error\":")
            json.string(pending.lastError)
            json.raw(",\"next_attempt_at\":")
            json.timestamp(pending.nextAttemptAt)
            json.raw(",\"since\":")
            json.timestamp(pending.since)
            json.raw("}")
        }
        json.raw(",\"provider\":")
        json.string(metadata.provider)
        if let refreshAt = metadata.refreshAt {
            json.raw(",\"refresh_at\":")
            json.timestamp(refreshAt)
        }
        json.raw(",\"refresh_failures\":")
        json.integer(metadata.refreshFailures)
        if let refreshTokenExpiresAt = metadata.refreshTokenExpiresAt {
            json.raw(",\"refresh_token_expires_at\":")
            json.timestamp(refreshTokenExpiresAt)
        }
        json.raw(",\"scopes\":")
        json.strings(metadata.scopes)
        json.raw(",\"status\":")
        json.string(metadata.status.rawValue)
        if let subject = metadata.subject {
            json.raw(",\"subject\":")
            json.string(subject)
        }
        if let tokenType = metadata.tokenType {
            json.raw(",\"token_type\":")
            json.string(tokenType)
        }
        json.raw(",\"updated_at\":")
        json.timestamp(metadata.updatedAt)
        json.raw("}")
    }

    /// A JSON string, by the one string writer (`JSONBytes`).
    private static func string(_ text: String, to buffer: inout ByteBuffer) {
        var text = text
        text.withUTF8 { TokenJSON.writeString(UnsafeRawBufferPointer($0), to: &buffer) }
    }
}
