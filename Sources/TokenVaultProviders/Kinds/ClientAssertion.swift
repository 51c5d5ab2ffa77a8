import Foundation
import TokenVaultCore

/// A client assertion (RFC 7523 sections 2.2 and 3, OpenID Connect Core section 9): a JWT that
/// says "this request is client X's", signed with the instance's client key (`private_key_jwt`)
/// or, HS256, with its client secret (`client_secret_jwt`). `iss` and `sub` are the client id,
/// `aud` the token endpoint, `jti` random so the server can refuse a replay, and `exp` a minute
/// on: a new one for every request. Kept in locked memory: until it expires, it authenticates.
enum ClientAssertion {
    static let type = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    static let lifetime: Int64 = 60

    private struct Header: Encodable {
        var alg: String
        var kid: String?
        var typ = "JWT"
    }

    private struct Claims: Encodable {
        var iss: String
        var sub: String
        var aud: String
        var jti: String
        var iat: Int64
        var exp: Int64
    }

    static func make(
        clientID: String, audience: String, now: Date, algorithm: JWSAlgorithm, keyID: String?,
        sign: ([UInt8]) throws -> [UInt8]
    ) throws -> SecretBytes {
        var generator = SystemRandomNumberGenerator()
        let jti = Base64URL.encode((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let issuedAt = Int64(now.timeIntervalSince1970)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let input =
            Base64URL.encode(try encoder.encode(Header(alg: algorithm.rawValue, kid: keyID))) + "."
            + Base64URL.encode(
                try encoder.encode(
                    Claims(
                        iss: clientID, sub: clientID, aud: audience, jti: jti, iat: issuedAt,
                        exp: issuedAt + lifetime)))
        return SecretBytes(utf8: input + "." + Base64URL.encode(try sign(Array(input.utf8))))
    }
}
