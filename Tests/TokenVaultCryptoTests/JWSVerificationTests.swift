import Crypto
import CryptoExtras
import Foundation
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultCrypto

/// JOSE's signature math: each algorithm accepts its own signatures by the right key and nothing
/// else (another key, a flipped byte, another algorithm, a key of the wrong type, HS256 with a
/// public key); and the instances' client keys sign what that math accepts.
@Suite struct JWSVerificationTests {
    let verification = JWSVerification()
    let input = Array("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlIn0".utf8)

    static func jwk(_ key: P256.Signing.PublicKey) -> JSONWebKey {
        let point = Array(key.x963Representation)
        return JSONWebKey(keyType: "EC", curve: "P-256", x: Array(point[1...32]), y: Array(point[33...64]))
    }

    static func jwk(_ key: _RSA.Signing.PublicKey) throws -> JSONWebKey {
        let primitives = try key.getKeyPrimitives()
        return JSONWebKey(
            keyType: "RSA", modulus: Array(primitives.modulus), exponent: Array(primitives.publicExponent))
    }

    @Test func es256AcceptsItsKeyOnly() throws {
        let key = P256.Signing.PrivateKey()
        let signature = Array(try key.signature(for: input).rawRepresentation)
        let jwk = Self.jwk(key.publicKey)
        #expect(verification.isValidSignature(signature, of: input, algorithm: .es256, key: jwk))
        #expect(!verification.isValidSignature(signature, of: input + [0], algorithm: .es256, key: jwk))
        var flipped = signature
        flipped[5] ^= 1
        #expect(!verification.isValidSignature(flipped, of: input, algorithm: .es256, key: jwk))
        #expect(
            !verification.isValidSignature(
                signature, of: input, algorithm: .es256, key: Self.jwk(P256.Signing.PrivateKey().publicKey)))
        // The same bytes under another algorithm's name, or a key naming another algorithm.
        #expect(!verification.isValidSignature(signature, of: input, algorithm: .rs256, key: jwk))
        var named = jwk
        named.algorithm = "ES384"
        #expect(!verification.isValidSignature(signature, of: input, algorithm: .es256, key: named))
        var encryption = jwk
        encryption.use = "enc"
        #expect(!verification.isValidSignature(signature, of: input, algorithm: .es256, key: encryption))
    }

    @Test func rs256AndPS256AreTold() throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let jwk = try Self.jwk(key.publicKey)
        let pkcs1 = Array(try key.signature(for: input, padding: .insecurePKCS1v1_5).rawRepresentation)
        let pss = Array(try key.signature(for: input, padding: .PSS).rawRepresentation)
        #expect(verification.isValidSignature(pkcs1, of: input, algorithm: .rs256, key: jwk))
        #expect(verification.isValidSignature(pss, of: input, algorithm: .ps256, key: jwk))
        #expect(!verification.isValidSignature(pkcs1, of: input, algorithm: .ps256, key: jwk))
        #expect(!verification.isValidSignature(pss, of: input, algorithm: .rs256, key: jwk))
        #expect(!verification.isValidSignature(pkcs1, of: Array(input.dropLast()), algorithm: .rs256, key: jwk))
        let other = try Self.jwk(try _RSA.Signing.PrivateKey(keySize: .bits2048).publicKey)
        #expect(!verification.isValidSignature(pkcs1, of: input, algorithm: .rs256, key: other))
    }

    @Test func edDSAVerifiesEd25519() throws {
        let key = Curve25519.Signing.PrivateKey()
        let signature = Array(try key.signature(for: input))
        let jwk = JSONWebKey(keyType: "OKP", curve: "Ed25519", x: Array(key.publicKey.rawRepresentation))
        #expect(verification.isValidSignature(signature, of: input, algorithm: .edDSA, key: jwk))
        #expect(!verification.isValidSignature(signature, of: input + [1], algorithm: .edDSA, key: jwk))
    }

    /// The classic confusion: a token signed HS256 with the public key's bytes as the secret.
    @Test func hmacNeverPassesForAPublicKey() throws {
        let key = P256.Signing.PrivateKey()
        let jwk = Self.jwk(key.publicKey)
        let secret = SecretBytes(Array(key.publicKey.x963Representation))
        let mac = verification.hmacSHA256(key: secret, input)
        #expect(!verification.isValidSignature(mac, of: input, algorithm: .hs256, key: jwk))
    }

    /// RFC 4231 section 4.3, test case 2.
    @Test func hmacSHA256MatchesRFC4231() {
        let mac = verification.hmacSHA256(
            key: SecretBytes(utf8: "Jefe"), Array("what do ya want for nothing?".utf8))
        #expect(
            mac.map { String(format: "%02x", $0) }.joined()
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func clientKeysAreStablePerInstanceAndApartFromDPoPKeys() throws {
        let store = InMemoryStore()
        let masterKey = SodiumRandom.secret(count: 32)
        let keyring = try Keyring.bootstrap(masterKey: masterKey, store: store, clock: FakeClock(Timestamp.now()))
        let key = try keyring.clientKey(for: "okta")
        let reopened = try Keyring(masterKey: masterKey, store: store)
        #expect(try reopened.clientKey(for: "okta").keyID == key.keyID)
        #expect(try keyring.clientKey(for: "other").keyID != key.keyID)
        #expect(try keyring.signer(for: "okta").thumbprint != key.keyID)
        // What it signs verifies under the JWK it publishes, which holds no private member.
        let jwk = try #require(JSONWebKey(.object(key.publicJWK)))
        #expect(jwk.keyID == key.keyID && jwk.algorithm == "ES256" && jwk.use == "sig")
        #expect(key.publicJWK["d"] == nil)
        let signature = try key.sign(input)
        #expect(verification.isValidSignature(signature, of: input, algorithm: .es256, key: jwk))
    }
}
