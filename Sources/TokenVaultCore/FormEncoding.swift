/// `application/x-www-form-urlencoded` (RFC 6749 Appendix B), byte by byte: provider
/// requests' bodies (a token goes from locked memory into the body without becoming a `String`),
/// authorization URLs, and the query of the redirect a sign-in comes back with.
public enum FormEncoding {
    private static let hex = Array("0123456789ABCDEF".utf8)

    /// Unreserved characters pass; a space becomes `+`; every other byte is percent-encoded.
    public static func escape(_ input: some Sequence<UInt8>, into output: inout [UInt8]) {
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

    public static func escape(_ value: String) -> String {
        var output: [UInt8] = []
        escape(value.utf8, into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// `name=value&…` with both sides escaped.
    public static func encode(_ parameters: [(name: String, value: String)]) -> String {
        parameters.map { escape($0.name) + "=" + escape($0.value) }.joined(separator: "&")
    }

    /// The pairs of a query or form body, in order, `+` and escapes decoded; nil when an escape
    /// is broken or a part is not UTF-8.
    public static func decode(_ text: Substring) -> [(name: String, value: String)]? {
        var pairs: [(name: String, value: String)] = []
        for part in text.split(separator: "&", omittingEmptySubsequences: true) {
            let sides = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = unescape(sides[0]), let value = unescape(sides.count > 1 ? sides[1] : "") else {
                return nil
            }
            pairs.append((name, value))
        }
        return pairs
    }

    private static func unescape(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%") {
                let high = utf8.index(after: index)
                guard high < utf8.endIndex else { return nil }
                let low = utf8.index(after: high)
                guard low < utf8.endIndex, let h = HexDigit.value(utf8[high]), let l = HexDigit.value(utf8[low]) else {
                    return nil
                }
                bytes.append(h << 4 | l)
                index = low
            } else {
                bytes.append(byte)
            }
            index = utf8.index(after: index)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
