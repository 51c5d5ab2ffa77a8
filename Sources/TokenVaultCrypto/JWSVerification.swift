import Crypto
import CryptoExtras
import Foundation
import TokenVaultCore

/// JOSE's signature math over swift-crypto (BoringSSL): RS256 and PS256 (RFC 7518 sections 3.3
/// and 3.5: SHA-256, PKCS #1 v1.5 or PSS with a 32-byte salt), ES256 (section 3.4: `r || s`
/// over P-256) and EdDSA (RFC 8037: Ed25519). RSA keys under 2048 bits are refused. Everything
/// else (which key, which claims) is decided by the caller.
public struct JWSVerification: JWSCryptography {
    public init() {}

    public func isValidSignature(
        _ signature: [UInt8], of signingInput: [UInt8], algorithm: JWSAlgorithm, key: JSONWebKey
    ) -> Bool {
        guard algorithm.fits(key) else { return false }
        switch algorithm {
        case .rs256, .ps256:
            guard let modulus = key.modulus, let exponent = key.exponent,
                let publicKey = try? _RSA.Signing.PublicKey(n: modulus, e: exponent)
            else { return false }
            return publicKey.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: Crypto.SHA256.hash(data: signingInput),
                padding: algorithm == .rs256 ? .insecurePKCS1v1_5 : .PSS)
        case .es256:
            guard let x = key.x, let y = key.y,
                let publicKey = try? P256.Signing.PublicKey(x963Representation: [0x04] + x + y),
                let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
            else { return false }
            return publicKey.isValidSignature(parsed, for: signingInput)
        case .edDSA:
            guard let x = key.x, let publicKey = try? Curve25519.Signing.PublicKey(rawRepresentation: x) else {
                return false
            }
            return publicKey.isValidSignature(signature, for: signingInput)
        case .hs256:
            return false
        }
    }

    public func hmacSHA256(key: SecretBytes, _ message: [UInt8]) -> [UInt8] {
        key.withUnsafeBytes { secret in
            Array(HMAC<Crypto.SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret)))
        }
    }
}
