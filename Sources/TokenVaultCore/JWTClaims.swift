import Foundation

/// Reads claims from a compact JWS without verifying it: for display (`subject`) and for the
/// checks that need no key (`IDTokenCheck`). Signatures are checked where the issuer's keys are
/// known (an `oauth2` instance's `IDTokenVerifier`).
public enum JWTClaims {
    public static func claims(of token: SecretBytes) -> [String: JSONValue]? {
        token.withUnsafeBytes { bytes in
            let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
            guard parts.count == 3, let payload = Base64URL.decode(parts[1]) else { return nil }
            guard case .object(let claims)? = try? JSONDecoder().decode(JSONValue.self, from: Data(payload)) else {
                return nil
            }
            return claims
        }
    }

    /// `aud` as a list: one string or an array of them (OpenID Connect Core section 2).
    public static func audiences(in claims: [String: JSONValue]) -> [String] {
        switch claims["aud"] {
        case .string(let single)?: [single]
        case .array(let many)?: many.compactMap { if case .string(let text) = $0 { text } else { nil } }
        default: []
        }
    }

    /// A NumericDate claim (`exp`, `iat`) in seconds, written as an integer or not.
    public static func seconds(_ value: JSONValue?) -> Double? {
        switch value {
        case .integer(let seconds)?: Double(seconds)
        case .number(let seconds)?: seconds
        default: nil
        }
    }

    public static func subject(of token: SecretBytes) -> String? {
        guard case .string(let subject)? = claims(of: token)?["sub"], subject.utf8.count <= 255 else { return nil }
        return subject
    }
}
