import Foundation

/// Reads claims from a compact JWS without verifying it: for display (`subject`) only.
/// Signature checks belong to code exchange, where the issuer and keys are known.
public enum JWTClaims {
    public static func claims(of token: SecretBytes) -> [String: JSONValue]? {
        token.withUnsafeBytes { bytes in
            let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
            guard parts.count == 3, let payload = base64URLDecode(parts[1]) else { return nil }
            guard case .object(let claims)? = try? JSONDecoder().decode(JSONValue.self, from: payload) else {
                return nil
            }
            return claims
        }
    }

    public static func subject(of token: SecretBytes) -> String? {
        guard case .string(let subject)? = claims(of: token)?["sub"], subject.utf8.count <= 255 else { return nil }
        return subject
    }

    static func base64URLDecode(_ part: some Collection<UInt8>) -> Data? {
        var text = String(decoding: part, as: UTF8.self)
            .replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.utf8.count % 4) % 4)
        return Data(base64Encoded: text)
    }
}
