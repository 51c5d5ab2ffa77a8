import Foundation

/// A JWS in compact serialisation (RFC 7515 section 7.1) taken apart, not yet verified: the
/// protected header and the claims as JSON objects, the bytes the signature covers, and the
/// signature. A token with an extension header it would have to understand (`crit`) is refused,
/// as section 4.1.11 requires of a reader that understands none.
public struct CompactJWS: Sendable {
    public var header: [String: JSONValue]
    public var claims: [String: JSONValue]
    /// `BASE64URL(header) || '.' || BASE64URL(payload)`, as written.
    public var signingInput: [UInt8]
    public var signature: [UInt8]

    public init?(_ token: SecretBytes) {
        guard
            let parsed = token.withUnsafeBytes({ bytes -> CompactJWS? in
                let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
                guard parts.count == 3, let header = Self.object(parts[0]), let claims = Self.object(parts[1]),
                    let signature = Base64URL.decode(parts[2])
                else { return nil }
                return CompactJWS(
                    header: header, claims: claims, signingInput: Array(bytes[..<parts[1].endIndex]),
                    signature: signature)
            }), parsed.header["crit"] == nil
        else { return nil }
        self = parsed
    }

    private init(header: [String: JSONValue], claims: [String: JSONValue], signingInput: [UInt8], signature: [UInt8]) {
        self.header = header
        self.claims = claims
        self.signingInput = signingInput
        self.signature = signature
    }

    /// The header's `alg`, as written (`none` included).
    public var algorithmName: String? { if case .string(let name)? = header["alg"] { name } else { nil } }
    public var keyID: String? { if case .string(let kid)? = header["kid"] { kid } else { nil } }

    private static func object(_ part: some Collection<UInt8>) -> [String: JSONValue]? {
        guard let bytes = Base64URL.decode(part),
            case .object(let members)? = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        else { return nil }
        return members
    }
}
