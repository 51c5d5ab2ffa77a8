import Foundation

/// Base64url without padding (RFC 4648 section 5), as OAuth writes random values and hashes:
/// a sign-in's state, PKCE verifier and challenge, and nonce.
public enum Base64URL {
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
