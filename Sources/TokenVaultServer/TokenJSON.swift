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

    /// A JSON string of UTF-8 `bytes` as `JSONEncoder` writes it: quote and backslash escaped,
    /// backspace, form feed, newline, return and tab as `\b \f \n \r \t`, other control
    /// characters as `\u00XX`; runs of plain bytes are copied in one go.
    static func writeString(_ bytes: UnsafeRawBufferPointer, to buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(ascii: "\""))
        var plainStart = 0
        for index in 0..<bytes.count {
            let byte = bytes[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            buffer.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[plainStart..<index]))
            switch byte {
            case UInt8(ascii: "\""): buffer.writeStaticString("\\\"")
            case UInt8(ascii: "\\"): buffer.writeStaticString("\\\\")
            case 0x08: buffer.writeStaticString("\\b")
            case 0x0c: buffer.writeStaticString("\\f")
            case UInt8(ascii: "\n"): buffer.writeStaticString("\\n")
            case UInt8(ascii: "\r"): buffer.writeStaticString("\\r")
            case UInt8(ascii: "\t"): buffer.writeStaticString("\\t")
            default:
                let hex: StaticString = "0123456789abcdef"
                buffer.writeStaticString("\\u00")
                buffer.writeInteger(hex.utf8Start[Int(byte >> 4)])
                buffer.writeInteger(hex.utf8Start[Int(byte & 0x0f)])
            }
            plainStart = index + 1
        }
        buffer.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[plainStart..<bytes.count]))
        buffer.writeInteger(UInt8(ascii: "\""))
    }
}
