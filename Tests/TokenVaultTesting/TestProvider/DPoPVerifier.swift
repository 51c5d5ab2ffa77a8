import Crypto
import Foundation
import Synchronization

/// A server's side of DPoP (RFC 9449 section 4.3), for the loopback token endpoint and resource
/// server: checks a proof's form, ES256 signature (swift-crypto), `htm`, `htu`, `iat`, `jti`
/// reuse, `nonce` and `ath`, and answers the key's thumbprint (`jkt`) when all hold. Written
/// from the RFC, apart from the vault's signer, so each checks the other.
public final class DPoPVerifier: Sendable {
    public enum Verdict: Sendable, Equatable {
        case accepted(thumbprint: String)
        /// No nonce, or an old one: answer `use_dpop_nonce` with `DPoP-Nonce: nonce`.
        case nonceRequired(nonce: String)
        /// `invalid_dpop_proof`, with the reason.
        case refused(String)
    }

    private struct State {
        var nonce: String
        var seen: Set<String> = []
        var accepted: [String] = []
        var keys: [String] = []
        var refuseNext = 0
        var challenges = 0
    }

    private let state: Mutex<State>
    /// Require the server's current nonce in every proof.
    public let requiresNonce: Bool

    public init(requiresNonce: Bool = true) {
        self.requiresNonce = requiresNonce
        state = Mutex(State(nonce: "n-" + UUID().uuidString))
    }

    /// The proofs accepted so far, in order.
    public var acceptedProofs: [String] { state.withLock { $0.accepted } }
    /// The thumbprints of the keys that made them, in the same order.
    public var acceptedKeys: [String] { state.withLock { $0.keys } }
    /// How many nonce challenges were answered.
    public var nonceChallenges: Int { state.withLock { $0.challenges } }
    public var nonce: String { state.withLock { $0.nonce } }

    /// A new nonce: proofs carrying the old one are challenged again.
    public func rotateNonce() { state.withLock { $0.nonce = "n-" + UUID().uuidString } }

    /// The next `count` proofs are refused as replays, as a server whose replay cache already
    /// holds their `jti` would.
    public func refuseNextAsReplayed(_ count: Int = 1) { state.withLock { $0.refuseNext += count } }

    public func check(proof: String?, method: String, url: String, accessToken: String?) -> Verdict {
        guard let proof, !proof.contains(",") else { return .refused("exactly one DPoP header is required") }
        let parts = proof.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Self.decode(parts[0]), let claimsData = Self.decode(parts[1]),
            let signature = Self.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any]
        else { return .refused("not a JWS") }
        guard header["typ"] as? String == "dpop+jwt" else { return .refused("typ is not dpop+jwt") }
        guard header["alg"] as? String == "ES256" else { return .refused("alg is not ES256") }
        guard let jwk = header["jwk"] as? [String: Any], jwk["d"] == nil else {
            return .refused("jwk is missing or holds a private key")
        }
        guard jwk["kty"] as? String == "EC", jwk["crv"] as? String == "P-256", let x = jwk["x"] as? String,
            let y = jwk["y"] as? String, let xBytes = Self.decode(Substring(x)), let yBytes = Self.decode(Substring(y)),
            let key = try? P256.Signing.PublicKey(rawRepresentation: xBytes + yBytes),
            let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            key.isValidSignature(ecdsa, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { return .refused("the signature does not verify with the jwk") }
        guard claims["htm"] as? String == method else { return .refused("htm is not \(method)") }
        let expected = String(url.prefix { $0 != "?" && $0 != "#" })
        guard claims["htu"] as? String == expected else { return .refused("htu is not \(expected)") }
        guard let iat = claims["iat"] as? Int, abs(Double(iat) - Date().timeIntervalSince1970) < 60 else {
            return .refused("iat is missing or too far from now")
        }
        if let accessToken {
            let hash = Self.encode(Data(Crypto.SHA256.hash(data: Data(accessToken.utf8))))
            guard claims["ath"] as? String == hash else { return .refused("ath does not match the access token") }
        }
        guard let jti = claims["jti"] as? String, !jti.isEmpty else { return .refused("jti is missing") }
        let nonce = claims["nonce"] as? String
        return state.withLock { state -> Verdict in
            if requiresNonce, nonce != state.nonce {
                state.challenges += 1
                return .nonceRequired(nonce: state.nonce)
            }
            if state.refuseNext > 0 {
                state.refuseNext -= 1
                state.seen.insert(jti)
                return .refused("jti was used before")
            }
            guard state.seen.insert(jti).inserted else { return .refused("jti was used before") }
            let thumbprint = Self.thumbprint(x: x, y: y)
            state.accepted.append(proof)
            state.keys.append(thumbprint)
            return .accepted(thumbprint: thumbprint)
        }
    }

    /// RFC 7638's thumbprint of a P-256 key.
    public static func thumbprint(x: String, y: String) -> String {
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        return encode(Data(Crypto.SHA256.hash(data: Data(canonical.utf8))))
    }

    /// The claims of a proof, for tests that look inside one.
    public static func claims(of proof: String) -> [String: Any] {
        let parts = proof.split(separator: ".")
        guard parts.count == 3, let data = decode(parts[1]) else { return [:] }
        return (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }

    static func decode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }

    static func encode(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
