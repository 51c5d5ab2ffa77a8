import Foundation
import Synchronization
import TokenVaultCore

/// Checks an id token as OpenID Connect Core sections 3.1.3.7 and 12.2 ask: signed with an allowed
/// public-key algorithm by a key of the issuer's JWKS, by the issuer, for this client, and current.
/// The key set is fetched on first use and kept; a token signed with a key it does not list (`kid`
/// unknown: the server rotated its keys) fetches it again at once, and later ones at most once per
/// `refetchInterval`, so a stream of forged `kid`s cannot make the vault hammer the server.
final class IDTokenVerifier: Sendable {
    /// What the token must satisfy.
    struct Rules: Sendable {
        var issuer: String
        var clientID: String
        var algorithms: Set<JWSAlgorithm>
        /// How far `exp` and `iat` may be off the vault's clock.
        var skew: Double = 60
    }

    private struct KeySet: Sendable {
        var keys: [JSONWebKey] = []
        var fetchedAt: Date?
        /// When a token's unknown key last made the vault fetch the set again.
        var refetchedAt: Date?
        var fetching: Task<[JSONWebKey], any Error>?
    }

    private let cryptography: any JWSCryptography
    private let refetchInterval: Double
    private let keySet = Mutex(KeySet())

    init(cryptography: any JWSCryptography, refetchInterval: Double) {
        self.cryptography = cryptography
        self.refetchInterval = refetchInterval
    }

    /// Why `idToken` is not acceptable, or nil when it is. `now`: when the token was received (a
    /// spooled answer's send time).
    func problem(
        with idToken: SecretBytes, jwks: String, rules: Rules, now: Date, over http: ProviderHTTPClient
    ) async -> String? {
        guard let token = CompactJWS(idToken) else { return "the id token is not a compact JWS" }
        let named = token.algorithmName ?? "none"
        guard let algorithm = JWSAlgorithm(rawValue: named), rules.algorithms.contains(algorithm) else {
            let allowed = rules.algorithms.sorted().map(\.rawValue).joined(separator: ", ")
            return OperatorText.clean("the id token is signed with '\(named.prefix(32))', not one of \(allowed)")
        }
        var keys: [JSONWebKey]
        do {
            keys = try await candidates(for: token, algorithm: algorithm, jwks: jwks, refetch: false, over: http)
            if keys.isEmpty {
                keys = try await candidates(for: token, algorithm: algorithm, jwks: jwks, refetch: true, over: http)
            }
        } catch {
            return OperatorText.clean("the issuer's keys could not be read: \(error)")
        }
        guard !keys.isEmpty else {
            return OperatorText.clean(
                "no \(algorithm.rawValue) key \(token.keyID.map { "with kid '\($0.prefix(64))' " } ?? "")in the "
                    + "issuer's JWKS")
        }
        guard
            keys.contains(where: {
                cryptography.isValidSignature(token.signature, of: token.signingInput, algorithm: algorithm, key: $0)
            })
        else { return "the id token's signature does not verify" }
        return Self.claimsProblem(token.claims, rules: rules, now: now)
    }

    /// The claims' rules: `iss` the issuer exactly; `aud` naming the client, and with more than one
    /// audience an `azp` that is the client; `exp` in the future and `iat` not, within the skew.
    static func claimsProblem(_ claims: [String: JSONValue], rules: Rules, now: Date) -> String? {
        guard case .string(let issuer)? = claims["iss"], issuer == rules.issuer else {
            return OperatorText.clean("the id token was not issued by \(rules.issuer)")
        }
        let audiences: [String]
        switch claims["aud"] {
        case .string(let single)?: audiences = [single]
        case .array(let many)?: audiences = many.compactMap { if case .string(let text) = $0 { text } else { nil } }
        default: audiences = []
        }
        guard audiences.contains(rules.clientID) else {
            return OperatorText.clean("the id token's audience does not include client \(rules.clientID)")
        }
        let party: String? = if case .string(let text)? = claims["azp"] { text } else { nil }
        if audiences.count > 1 || party != nil, party != rules.clientID {
            return "the id token's authorized party (azp) is not this client"
        }
        guard let expiry = seconds(claims["exp"]), let issuedAt = seconds(claims["iat"]) else {
            return "the id token lacks exp or iat"
        }
        let clock = now.timeIntervalSince1970
        if expiry <= clock - rules.skew { return "the id token expired at \(Timestamp(seconds: expiry))" }
        if issuedAt > clock + rules.skew {
            return "the id token was issued in the future (\(Timestamp(seconds: issuedAt)))"
        }
        return nil
    }

    private static func seconds(_ value: JSONValue?) -> Double? {
        switch value {
        case .integer(let seconds)?: Double(seconds)
        case .number(let seconds)?: seconds
        default: nil
        }
    }

    /// The set's keys that may have signed `token`: its `kid`'s if it names one, else every key that
    /// fits the algorithm. `refetch`: fetch the set again first, unless it was fetched within the
    /// interval.
    private func candidates(
        for token: CompactJWS, algorithm: JWSAlgorithm, jwks: String, refetch: Bool, over http: ProviderHTTPClient
    ) async throws -> [JSONWebKey] {
        let keys = try await keys(jwks, refetch: refetch, over: http)
        return keys.filter { key in
            algorithm.fits(key) && (token.keyID == nil || key.keyID == token.keyID)
        }
    }

    private func keys(_ jwks: String, refetch: Bool, over http: ProviderHTTPClient) async throws -> [JSONWebKey] {
        let now = Date()
        let task = keySet.withLock { set -> Task<[JSONWebKey], any Error>? in
            if let fetching = set.fetching { return fetching }
            if set.fetchedAt != nil {
                guard refetch else { return nil }
                if let last = set.refetchedAt, now.timeIntervalSince(last) < refetchInterval { return nil }
                set.refetchedAt = now
            }
            let fetching = Task { try await Self.fetch(jwks, over: http) }
            set.fetching = fetching
            return fetching
        }
        guard let task else { return keySet.withLock { $0.keys } }
        do {
            let keys = try await task.value
            keySet.withLock { set in
                set.keys = keys
                set.fetchedAt = Date()
                set.fetching = nil
            }
            return keys
        } catch {
            keySet.withLock { $0.fetching = nil }
            throw error
        }
    }

    private static func fetch(_ url: String, over http: ProviderHTTPClient) async throws -> [JSONWebKey] {
        let answer = try await http.get(url)
        guard (200..<300).contains(answer.status) else {
            throw ProviderFailure(
                kind: .transient, code: .discoveryFailed, message: "JWKS \(url) answered \(answer.status)")
        }
        guard !answer.bodyTooLarge, let keys = JSONWebKey.set(from: answer.body) else {
            throw ProviderFailure(kind: .misconfigured, code: .discoveryFailed, message: "JWKS \(url) is not a JWK Set")
        }
        return keys
    }
}
