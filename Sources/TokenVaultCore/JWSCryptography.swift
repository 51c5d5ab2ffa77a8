/// The signature math of JOSE, which lives in TokenVaultCrypto (swift-crypto): Core and the
/// providers lay out tokens and assertions and decide which key may check what; this checks and
/// computes the bytes.
public protocol JWSCryptography: Sendable {
    /// Whether `signature` is `algorithm`'s signature of `signingInput` under the public `key`.
    /// False for a key that does not fit the algorithm (`JWSAlgorithm.fits`) and for HS256.
    func isValidSignature(
        _ signature: [UInt8], of signingInput: [UInt8], algorithm: JWSAlgorithm, key: JSONWebKey
    ) -> Bool
    /// HMAC-SHA-256 of `message` under `key`: a `client_secret_jwt` assertion's signature.
    func hmacSHA256(key: SecretBytes, _ message: [UInt8]) -> [UInt8]
}

/// A private key the vault holds and signs with, never exported: a provider instance's client
/// key for `private_key_jwt`.
public protocol JWSSigner: Sendable {
    var algorithm: JWSAlgorithm { get }
    /// The public key's `kid` (its RFC 7638 thumbprint).
    var keyID: String { get }
    /// The public key as a JWK, with `kid`, `alg` and `use`: what the server registers.
    var publicJWK: [String: JSONValue] { get }
    /// The JWS signature of `signingInput` (for ES256, `r || s`).
    func sign(_ signingInput: [UInt8]) throws -> [UInt8]
}

/// Where an instance's client key comes from (the keyring, which derives it from a sealed seed).
public protocol ClientKeySource: Sendable {
    func clientKey(for instance: String) throws -> any JWSSigner
}
