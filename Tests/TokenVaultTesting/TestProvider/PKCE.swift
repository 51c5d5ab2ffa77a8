import Foundation
import TokenVaultCrypto

/// PKCE S256 (RFC 7636 4.2) and base64url without padding, for checking a code exchange and for
/// tests that play the client. SHA-256 is libsodium's, through TokenVaultCrypto (already a
/// dependency of this target): no hand-written hash to get wrong.
public enum PKCE {
    /// `BASE64URL(SHA256(ASCII(verifier)))`.
    public static func challenge(for verifier: String) -> String {
        base64URL(bytes(fromHex: SHA256.hex(Array(verifier.utf8))))
    }

    /// A new 43-character verifier from 32 random bytes.
    public static func makeVerifier() -> String {
        var generator = SystemRandomNumberGenerator()
        return base64URL((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// RFC 7636 4.1: 43 to 128 characters of `[A-Za-z0-9-._~]`.
    public static func isWellFormedVerifier(_ verifier: String) -> Bool {
        (43...128).contains(verifier.utf8.count)
            && verifier.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                    UInt8(ascii: "~"):
                    return true
                default: return false
                }
            }
    }

    public static func base64URL(_ bytes: some Collection<UInt8>) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    private static func bytes(fromHex hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }
}
