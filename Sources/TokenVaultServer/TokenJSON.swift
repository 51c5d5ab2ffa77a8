import NIOCore
import TokenVaultCore

/// Writes the body of `GET .../token`, `{"access_token", "expires_at", "id_token",
/// "token_type"}` (keys sorted, absent values left out, as `JSONEncoder` with `.sortedKeys`
/// writes `TokenDocument`), straight from the secrets' locked memory into the response buffer:
/// no `String` copy of a token is made, and no encoder is allocated per request.
enum TokenJSON {
    static func body(
        accessToken: SecretBytes, tokenType: String, expiresAt: Timestamp?, idToken: SecretBytes?,
        allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 96 + accessToken.count + (idToken?.count ?? 0) + tokenType.utf8.count)
        buffer.writeStaticString("{\"access_token\":")
        accessToken.withUnsafeBytes { writeString($0, to: &buffer) }
        if let expiresAt {
            buffer.writeStaticString(",\"expires_at\":")
            var text = expiresAt.description
            text.withUTF8 { writeString(UnsafeRawBufferPointer($0), to: &buffer) }
        }
        if let idToken {
            buffer.writeStaticString(",\"id_token\":")
            idToken.withUnsafeBytes { writeString($0, to: &buffer) }
        }
        buffer.writeStaticString(",\"token_type\":")
        var type = tokenType
        type.withUTF8 { writeString(UnsafeRawBufferPointer($0), to: &buffer) }
        buffer.writeStaticString("}")
        return buffer
    }

    /// A JSON string of UTF-8 `bytes` as `JSONEncoder` writes it (`JSONBytes.string`).
    static func writeString(_ bytes: UnsafeRawBufferPointer, to buffer: inout ByteBuffer) {
        buffer.writeJSON(reserving: JSONBytes.bound(string: bytes.count)) { $0.string(bytes) }
    }
}
