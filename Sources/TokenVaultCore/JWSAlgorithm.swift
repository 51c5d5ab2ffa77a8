/// The JWS algorithms (RFC 7518 section 3, RFC 8037) the vault verifies or signs with. `none` is
/// not among them, and an HMAC algorithm is never accepted with a public key: a token whose
/// header names one cannot pass for a signature by the issuer's published key.
public enum JWSAlgorithm: String, Sendable, CaseIterable, Comparable {
    case rs256 = "RS256"
    case ps256 = "PS256"
    case es256 = "ES256"
    case edDSA = "EdDSA"
    /// Only for `client_secret_jwt` assertions the vault signs with the client secret.
    case hs256 = "HS256"

    /// What an id token may be signed with: public-key algorithms only.
    public static let publicKey: Set<JWSAlgorithm> = [.rs256, .ps256, .es256, .edDSA]

    /// Whether `key` is of the type and curve this algorithm uses (RFC 7518 section 6, RFC 8037
    /// section 2), says it is for signatures if it says what it is for, and names this algorithm
    /// if it names one.
    public func fits(_ key: JSONWebKey) -> Bool {
        if let use = key.use, use != "sig" { return false }
        if let algorithm = key.algorithm, algorithm != rawValue { return false }
        switch self {
        case .rs256, .ps256: return key.keyType == "RSA" && key.modulus != nil && key.exponent != nil
        case .es256: return key.keyType == "EC" && key.curve == "P-256" && key.x?.count == 32 && key.y?.count == 32
        case .edDSA: return key.keyType == "OKP" && key.curve == "Ed25519" && key.x?.count == 32
        case .hs256: return false
        }
    }

    public static func < (lhs: JWSAlgorithm, rhs: JWSAlgorithm) -> Bool { lhs.rawValue < rhs.rawValue }
}
