import Foundation

/// A public key as a JSON Web Key (RFC 7517): the members that say which signatures it checks.
/// Private members are never read; a key set's unreadable keys are skipped (RFC 7517 section 5:
/// a set may hold key types the reader does not know).
public struct JSONWebKey: Sendable, Equatable {
    /// `kty`: `RSA`, `EC` or `OKP`.
    public var keyType: String
    public var keyID: String?
    public var algorithm: String?
    public var use: String?
    /// `crv`: `P-256`, `Ed25519`.
    public var curve: String?
    /// RSA's `n` and `e`, big-endian.
    public var modulus: [UInt8]?
    public var exponent: [UInt8]?
    /// The curve point's coordinates (EC `x` and `y`; OKP's public key is `x`).
    public var x: [UInt8]?
    public var y: [UInt8]?

    public init(
        keyType: String, keyID: String? = nil, algorithm: String? = nil, use: String? = nil, curve: String? = nil,
        modulus: [UInt8]? = nil, exponent: [UInt8]? = nil, x: [UInt8]? = nil, y: [UInt8]? = nil
    ) {
        self.keyType = keyType
        self.keyID = keyID
        self.algorithm = algorithm
        self.use = use
        self.curve = curve
        self.modulus = modulus
        self.exponent = exponent
        self.x = x
        self.y = y
    }

    /// One key of a set; nil when `kty` is missing or a binary member is not base64url.
    public init?(_ value: JSONValue) {
        guard case .object(let members) = value, case .string(let keyType)? = members["kty"] else { return nil }
        func text(_ name: String) -> String? { if case .string(let text)? = members[name] { text } else { nil } }
        var binary: [String: [UInt8]] = [:]
        for name in ["n", "e", "x", "y"] {
            guard let member = members[name] else { continue }
            guard case .string(let encoded) = member, let bytes = Base64URL.decode(Array(encoded.utf8)) else {
                return nil
            }
            binary[name] = bytes
        }
        self.init(
            keyType: keyType, keyID: text("kid"), algorithm: text("alg"), use: text("use"), curve: text("crv"),
            modulus: binary["n"], exponent: binary["e"], x: binary["x"], y: binary["y"])
    }

    /// The keys of a JWK Set document (`{"keys": [...]}`); nil when the document is not one.
    public static func set(from document: [UInt8]) -> [JSONWebKey]? {
        guard case .object(let members)? = try? JSONDecoder().decode(JSONValue.self, from: Data(document)),
            case .array(let keys)? = members["keys"]
        else { return nil }
        return keys.compactMap(JSONWebKey.init)
    }
}
