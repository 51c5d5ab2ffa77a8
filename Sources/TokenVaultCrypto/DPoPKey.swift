import Crypto
import Foundation
import TokenVaultCore

/// A provider instance's DPoP key (RFC 9449): an ES256 (P-256) key pair that proves the vault
/// holds the key its tokens are bound to. The private half is derived from the vault's sealed
/// DPoP seed and the instance's name (`Keyring.signer(for:)`), so it is never stored, exported
/// or sent: every node of a shared vault derives the same key, restarts and `rotate-key` leave it
/// as it is, and a rekey re-wraps the seed with the other vault secrets. Signing is swift-crypto's
/// (BoringSSL); this type only lays out the JWS.
public struct DPoPKey: DPoPSigner {
    private let key: P256.Signing.PrivateKey
    private let jwk: JWK
    private let clock: any VaultClock
    public let thumbprint: String

    /// The public key as a JWK; members in lexicographic order, as RFC 7638 hashes them.
    struct JWK: Codable, Sendable {
        var crv = "P-256"
        var kty = "EC"
        var x: String
        var y: String
    }

    /// `scalar`: 32 bytes, a valid P-256 private key (else throws).
    init(scalar: [UInt8], clock: any VaultClock) throws {
        key = try P256.Signing.PrivateKey(rawRepresentation: scalar)
        let point = Array(key.publicKey.x963Representation)  // 0x04 || x || y
        jwk = JWK(x: Base64URL.encode(point[1...32]), y: Base64URL.encode(point[33...64]))
        thumbprint = Self.thumbprint(x: jwk.x, y: jwk.y)
        self.clock = clock
    }

    /// RFC 7638: SHA-256 over the required members in lexicographic order, no whitespace.
    static func thumbprint(x: String, y: String) -> String {
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        return Base64URL.encode(Array(Crypto.SHA256.hash(data: Array(canonical.utf8))))
    }

    private struct Header: Encodable {
        var typ = "dpop+jwt"
        var alg = "ES256"
        var jwk: JWK
    }

    private struct Claims: Encodable {
        var jti: String
        var htm: String
        var htu: String
        var iat: Int64
        var ath: String?
        var nonce: String?
    }

    public func proof(method: String, url: String, accessToken: SecretBytes?, nonce: String?) throws -> String {
        let claims = Claims(
            jti: Base64URL.encode(SodiumRandom.bytes(count: 16)), htm: method,
            htu: String(url.prefix { $0 != "?" && $0 != "#" }), iat: clock.now.milliseconds / 1000,
            ath: accessToken.map { token in
                token.withUnsafeBytes { Base64URL.encode(Array(Crypto.SHA256.hash(data: $0))) }
            },
            nonce: nonce)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let input =
            Base64URL.encode(try encoder.encode(Header(jwk: jwk))) + "." + Base64URL.encode(try encoder.encode(claims))
        // ES256 in JWS is the raw r || s (RFC 7518 section 3.4), which is swift-crypto's raw form.
        return input + "." + Base64URL.encode(try key.signature(for: Array(input.utf8)).rawRepresentation)
    }
}

extension Keyring: DPoPKeySource {
    /// The DPoP key of provider instance `instance`. A renamed instance has another key, so tokens
    /// bound to the old name's key must be refreshed under the old name.
    public func signer(for instance: String) throws -> any DPoPSigner {
        try derivedP256Key(label: "tokenvault.dpop-key.v1", instance: instance) { scalar in
            try DPoPKey(scalar: scalar, clock: clock)
        }
    }

    /// A P-256 key of instance `instance` for one purpose (`label`): keyed BLAKE2b of the DPoP seed
    /// over the label and the name (and a counter, for the 1 in 2^32 outputs that are not a P-256
    /// scalar). Keys of different labels are unrelated; none is ever stored.
    func derivedP256Key<Key>(label: String, instance: String, _ make: ([UInt8]) throws -> Key) throws -> Key {
        guard let seed = secret(.dpopSeed) else { throw VaultError.integrity("this vault has no DPoP seed yet") }
        for counter in UInt8(0)..<16 {
            var scalar = Self.derivedScalar(seed: seed, label: label, instance: instance, counter: counter)
            defer { scalar.wipe() }
            if let key = try? make(scalar) { return key }
        }
        throw VaultError.integrity("no \(label) could be derived for provider instance \(instance)")
    }

    static func derivedScalar(seed: SecretBytes, label: String, instance: String, counter: UInt8) -> [UInt8] {
        KeyedHash.mac(key: seed, Array(label.utf8) + [0] + Array(instance.utf8) + [0, counter])
    }
}
