import TokenVaultCore

/// `application/x-www-form-urlencoded` (RFC 6749 Appendix B), written byte by byte so a refresh
/// token goes from locked memory into the request body without becoming a `String` on the way.
public struct FormBody: Sendable {
    private(set) var bytes: [UInt8] = []

    mutating func append(_ name: String, _ value: String) {
        appendName(name)
        FormEncoding.escape(value.utf8, into: &bytes)
    }

    mutating func append(_ name: String, secret: SecretBytes) {
        appendName(name)
        secret.withUnsafeBytes { FormEncoding.escape($0, into: &bytes) }
    }

    private mutating func appendName(_ name: String) {
        if !bytes.isEmpty { bytes.append(UInt8(ascii: "&")) }
        FormEncoding.escape(name.utf8, into: &bytes)
        bytes.append(UInt8(ascii: "="))
    }
}
