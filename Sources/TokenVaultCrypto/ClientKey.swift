import Crypto
import TokenVaultCore

/// A provider instance's client key for `private_key_jwt` (RFC 7523 section 2.2, OpenID Connect
/// Core section 9): an ES256 key pair derived like the instance's DPoP key, from the vault's
/// sealed seed and the instance's name, under a label of its own, so the two keys are unrelated.
/// Never stored or exported: every node of a shared vault derives the same key, restarts and
/// `rotate-key` leave it as it is, and the server registers its public half once
/// (`tokenvault providers jwks NAME`).
public struct ClientKey: JWSSigner {
    private let key: P256.Signing.PrivateKey
    public let keyID: String
    public let publicJWK: [String: JSONValue]
    public var algorithm: JWSAlgorithm { .es256 }

    /// `scalar`: 32 bytes, a valid P-256 private key (else throws).
    init(scalar: [UInt8]) throws {
        key = try P256.Signing.PrivateKey(rawRepresentation: scalar)
        let point = Array(key.publicKey.x963Representation)  // 0x04 || x || y
        let x = Base64URL.encode(point[1...32])
        let y = Base64URL.encode(point[33...64])
        keyID = DPoPKey.thumbprint(x: x, y: y)
        publicJWK = [
            "kty": .string("EC"), "crv": .string("P-256"), "x": .string(x), "y": .string(y),
            "kid": .string(keyID), "alg": .string("ES256"), "use": .string("sig"),
        ]
    }

    public func sign(_ signingInput: [UInt8]) throws -> [UInt8] {
        Array(try key.signature(for: signingInput).rawRepresentation)
    }
}

extension Keyring: ClientKeySource {
    public func clientKey(for instance: String) throws -> any JWSSigner {
        try derivedP256Key(label: "tokenvault.client-key.v1", instance: instance) { try ClientKey(scalar: $0) }
    }
}
