import Foundation

/// Compact JWTs with `"alg": "none"` and an empty signature: an `id_token` whose claims (`sub`,
/// `aud`, `nonce`, ...) clients can read, and the JWT body of the Sber quirk. Nobody can verify
/// them, which is the point: they must never be trusted for more than display.
enum UnsignedJWT {
    static func make(_ claims: [(String, JSONText)]) -> String {
        let header = JSONText.object([("alg", .string("none")), ("typ", .string("JWT"))])
        return PKCE.base64URL(header.bytes) + "." + PKCE.base64URL(JSONText.object(claims).bytes) + "."
    }
}
