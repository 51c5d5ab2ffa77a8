import NIOCore
import TokenVaultCore

/// Writes the body of `GET .../token`, `{"access_token", "expires_at", "id_token",
/// "token_type"}` (keys sorted, absent values left out, as `JSONEncoder` with `.sortedKeys`
/// writes `TokenDocument`), straight from the secrets' locked memory into the response buffer:
/// no `String` copy of a token is made, and no encoder is allocated per request.
enum TokenJSON {
    /// A token never sits in a cache.
    static let cacheControl = "no-store"
    /// The same, as the event loop writes the header's line.
    static let cacheControlLine = "Cache-Control: \(cacheControl)\r\n"

    /// `issuedTokenType` and `scopes`: a derived token's (`POST .../token-exchange`).
    static func body(
        accessToken: SecretBytes, tokenType: String, expiresAt: Timestamp?, idToken: SecretBytes?,
        issuedTokenType: String? = nil, scopes: [String]? = nil, allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        let bound =
            96 + JSONBytes.bound(string: accessToken.count) + JSONBytes.bound(string: idToken?.count ?? 0)
            + JSONBytes.bound(tokenType) + JSONBytes.timestampBound + JSONBytes.bound(issuedTokenType ?? "")
            + (scopes ?? []).reduce(0) { $0 + 4 + JSONBytes.bound($1) }
        var buffer = allocator.buffer(capacity: bound)
        buffer.writeJSON(reserving: bound) { json in
            json.raw("{\"access_token\":")
            accessToken.withUnsafeBytes { json.string($0) }
            if let expiresAt {
                json.raw(",\"expires_at\":")
                json.timestamp(expiresAt)
            }
            if let idToken {
                json.raw(",\"id_token\":")
                idToken.withUnsafeBytes { json.string($0) }
            }
            if let issuedTokenType {
                json.raw(",\"issued_token_type\":")
                json.string(issuedTokenType)
            }
            if let scopes {
                json.raw(",\"scopes\":")
                json.strings(scopes)
            }
            json.raw(",\"token_type\":")
            json.string(tokenType)
            json.raw("}")
        }
        return buffer
    }

    /// A JSON string of UTF-8 `bytes` as `JSONEncoder` writes it (`JSONBytes.string`).
    static func writeString(_ bytes: UnsafeRawBufferPointer, to buffer: inout ByteBuffer) {
        buffer.writeJSON(reserving: JSONBytes.bound(string: bytes.count)) { $0.string(bytes) }
    }
}
