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

enum FormEncoding {
    private static let hex = Array("0123456789ABCDEF".utf8)

    /// Unreserved characters pass; a space becomes `+`; every other byte is percent-encoded.
    static func escape(_ input: some Sequence<UInt8>, into output: inout [UInt8]) {
        for byte in input {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                output.append(byte)
            case UInt8(ascii: " "):
                output.append(UInt8(ascii: "+"))
            default:
                output.append(UInt8(ascii: "%"))
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0x0F)])
            }
        }
    }

    static func escape(_ value: String) -> String {
        var output: [UInt8] = []
        escape(value.utf8, into: &output)
        return String(decoding: output, as: UTF8.self)
    }
}
