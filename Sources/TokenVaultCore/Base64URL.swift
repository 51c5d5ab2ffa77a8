import Foundation

/// Base64url without padding (RFC 4648 section 5), as OAuth writes random values and hashes
/// (a sign-in's state, PKCE verifier and challenge, and nonce) and JOSE every binary member.
public enum Base64URL {
    /// The bytes of unpadded base64url text; nil for any other character, for padding, or for a
    /// length no encoder writes (JOSE forbids padding: RFC 7515 section 2).
    public static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        var standard: [UInt8] = []
        standard.reserveCapacity(text.count + 3)
        for byte in text {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                standard.append(byte)
            case UInt8(ascii: "-"): standard.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): standard.append(UInt8(ascii: "/"))
            default: return nil
            }
        }
        standard += Array(repeating: UInt8(ascii: "="), count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: Data(standard)).map(Array.init)
    }

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A secret encoded in locked memory: the encoded text never exists as a `String`.
    public static func encode(_ secret: SecretBytes) -> SecretBytes {
        secret.withUnsafeBytes { bytes in
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
            let count = (bytes.count * 4 + 2) / 3
            return SecretBytes(count: count) { out in
                var bits = 0
                var value: UInt32 = 0
                var written = 0
                for byte in bytes {
                    value = value << 8 | UInt32(byte)
                    bits += 8
                    while bits >= 6 {
                        bits -= 6
                        out[written] = alphabet[Int(value >> UInt32(bits) & 63)]
                        written += 1
                    }
                }
                if bits > 0 {
                    out[written] = alphabet[Int(value << UInt32(6 - bits) & 63)]
                    written += 1
                }
            }
        }
    }
}
