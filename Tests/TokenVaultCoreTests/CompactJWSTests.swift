import Foundation
import Testing
import TokenVaultCore

/// Taking a JWS apart before any key is chosen: what is read, what is refused, and that the
/// signed bytes are the token's own.
@Suite struct CompactJWSTests {
    static func part(_ json: String) -> String { Base64URL.encode(Array(json.utf8)) }

    @Test func partsAreReadAndTheSigningInputIsAsWritten() throws {
        let head = Self.part(#"{"alg":"ES256","kid":"k1"}"#)
        let body = Self.part(#"{"iss":"https://idp.example","aud":["a"]}"#)
        let token = try #require(CompactJWS(SecretBytes(utf8: head + "." + body + ".AQID")))
        #expect(token.algorithmName == "ES256" && token.keyID == "k1")
        #expect(token.claims["iss"] == .string("https://idp.example"))
        #expect(token.signingInput == Array((head + "." + body).utf8))
        #expect(token.signature == [1, 2, 3])
    }

    @Test(arguments: [
        "a.b", "a.b.c.d", Self.part("{}") + "." + Self.part("[]") + ".AQID",
        Self.part("{}") + "." + Self.part("{}") + ".AQ=D", Self.part("{}") + "." + Self.part("{}") + ".A+ID",
        Self.part(#"{"alg":"ES256","crit":["exp"]}"#) + "." + Self.part("{}") + ".AQID",
    ])
    func malformedTokensAreRefused(text: String) {
        #expect(CompactJWS(SecretBytes(utf8: text)) == nil)
    }

    @Test func base64URLDecodingIsStrict() {
        #expect(Base64URL.decode(Array("AQID".utf8)) == [1, 2, 3])
        #expect(Base64URL.decode(Array("_-8".utf8)) == [0xff, 0xef])
        #expect(Base64URL.decode(Array("AQID=".utf8)) == nil)
        #expect(Base64URL.decode(Array("A".utf8)) == nil)
        #expect(Base64URL.decode(Array("A/ID".utf8)) == nil)
        let bytes = (0..<64).map { UInt8($0 * 4 % 256) }
        #expect(Base64URL.decode(Array(Base64URL.encode(bytes).utf8)) == bytes)
    }

    @Test func aKeySetSkipsWhatItCannotRead() throws {
        let document = #"""
            {"keys": [
              {"kty": "EC", "crv": "P-256", "kid": "e1", "x": "AQID", "y": "BAUG", "use": "sig"},
              {"kty": "RSA", "n": "not base64!", "e": "AQAB"},
              {"crv": "P-256"},
              {"kty": "oct", "k": "c2VjcmV0"}
            ]}
            """#
        let keys = try #require(JSONWebKey.set(from: Array(document.utf8)))
        #expect(keys.map(\.keyType) == ["EC", "oct"])
        #expect(keys[0].keyID == "e1" && keys[0].x == [1, 2, 3] && keys[0].y == [4, 5, 6])
        // An HMAC key fits no algorithm an id token may use.
        #expect(JWSAlgorithm.allCases.allSatisfy { !$0.fits(keys[1]) })
        #expect(JSONWebKey.set(from: Array(#"{"key": []}"#.utf8)) == nil)
    }
}
