import Foundation
import Synchronization
import TokenVaultCore

/// Checks an id token as OpenID Connect Core section 3.1.3.7 asks: signed with an allowed
/// public-key algorithm by a key of the issuer's JWKS, by the issuer, for this client, and current.
/// (Section 12.2's rule for refreshes, the same `sub`, is `NextGeneration`'s.)
///
/// The key set is fetched on first use and kept for `maximumAge`. A token signed with a key it
/// does not list (`kid` unknown), or whose signature none of its keys verifies (a key replaced
/// under the same `kid`, or a server that names none), fetches it again at once, and later ones at
/// most once per `refetchInterval`, so a stream of forged tokens cannot make the vault hammer the
/// server. A fetch that failed is not tried again within that interval either.
final class IDTokenVerifier: Sendable {
    /// What the token must satisfy.
    struct Rules: Sendable {
        var issuer: String
        var clientID: String
        var algorithms: Set<JWSAlgorithm>
        /// How far `exp` and `iat` may be off the vault's clock.
        var skew: Double = 60
    }

    /// Why a token is not accepted.
    enum Verdict: Sendable, Equatable {
        /// The token is not the issuer's, or not for this client now.
        case refused(String)
        /// It could not be checked: the issuer's keys could not be read.
        case unverifiable(String)
    }

    private struct KeySet: Sendable {
        var keys: [JSONWebKey] = []
        var fetchedAt: Date?
        /// When a token's unknown key or failed signature last made the vault fetch the set again.
        var refetchedAt: Date?
        var failure: (at: Date, message: String)?
        var fetching: Task<[JSONWebKey], any Error>?
    }

    private let cryptography: any JWSCryptography
    private let refetchInterval: Double
    private let maximumAge: Double
    private let keySet = Mutex(KeySet())

    init(cryptography: any JWSCryptography, refetchInterval: Double, maximumAge: Double) {
        self.cryptography = cryptography
        self.refetchInterval = refetchInterval
        self.maximumAge = maximumAge
    }

    /// Why `idToken` is not acceptable, or nil when it is. `now`: when the token was received (a
    /// spooled answer's send time).
    func verdict(
        on idToken: SecretBytes, jwks: String, rules: Rules, now: Date, over http: ProviderHTTPClient
    ) async -> Verdict? {
        guard let token = CompactJWS(idToken) else { return .refused("the id token is not a compact JWS") }
        let named = token.algorithmName ?? "none"
        guard let algorithm = JWSAlgorithm(rawValue: named), rules.algorithms.contains(algorithm) else {
            let allowed = rules.algorithms.sorted().map(\.rawValue).joined(separator: ", ")
            return .refused(
                OperatorText.clean("the id token is signed with '\(named.prefix(32))', not one of \(allowed)"))
        }
        var found = false
        var unread: String?
        for refetch in [false, true] {
            let keys: [JSONWebKey]
            do {
                let read = try await self.keys(jwks, refetch: refetch, over: http)
                unread = read.unread ?? unread
                keys = read.keys.filter { key in
                    algorithm.fits(key) && (token.keyID == nil || key.keyID == token.keyID)
                }
            } catch {
                return .unverifiable(OperatorText.clean("the issuer's keys could not be read: \(error)"))
            }
            found = found || !keys.isEmpty
            if keys.contains(where: {
                cryptography.isValidSignature(token.signature, of: token.signingInput, algorithm: algorithm, key: $0)
            }) {
                return Self.claimsProblem(token.claims, rules: rules, now: now).map(Verdict.refused)
            }
        }
        // Held keys failed, and a newer set could not be read: the token may be signed by a key the
        // issuer published meanwhile, so it is not refused.
        if let unread {
            return .unverifiable(OperatorText.clean("the issuer's keys could not be read again: \(unread)"))
        }
        guard found else {
            return .refused(
                OperatorText.clean(
                    "no \(algorithm.rawValue) key \(token.keyID.map { "with kid '\($0.prefix(64))' " } ?? "")in the "
                        + "issuer's JWKS"))
        }
        return .refused("the id token's signature does not verify")
    }

    /// The claims' rules: `iss` the issuer exactly; `aud` naming the client, and with more than one
    /// audience an `azp` that is the client; `exp` in the future and `iat` not, within the skew.
    static func claimsProblem(_ claims: [String: JSONValue], rules: Rules, now: Date) -> String? {
        guard case .string(let issuer)? = claims["iss"], issuer == rules.issuer else {
            return OperatorText.clean("the id token was not issued by \(rules.issuer)")
        }
        let audiences = JWTClaims.audiences(in: claims)
        guard audiences.contains(rules.clientID) else {
            return OperatorText.clean("the id token's audience does not include client \(rules.clientID)")
        }
        let party: String? = if case .string(let text)? = claims["azp"] { text } else { nil }
        if audiences.count > 1 || party != nil, party != rules.clientID {
            return "the id token's authorized party (azp) is not this client"
        }
        guard let expiry = JWTClaims.seconds(claims["exp"]), let issuedAt = JWTClaims.seconds(claims["iat"]) else {
            return "the id token lacks exp or iat"
        }
        let clock = now.timeIntervalSince1970
        if expiry <= clock - rules.skew { return "the id token expired at \(Timestamp(seconds: expiry))" }
        if issuedAt > clock + rules.skew {
            return "the id token was issued in the future (\(Timestamp(seconds: issuedAt)))"
        }
        return nil
    }

    /// The set's keys: as kept while it is younger than `maximumAge`, else read again; `refetch`:
    /// read again now unless that was done within `refetchInterval`. One fetch at a time, which
    /// alone writes what it read; after a failed one, none within the interval. Keys held before
    /// are served when a read wanted now cannot be made, with why (`unread`).
    private func keys(_ jwks: String, refetch: Bool, over http: ProviderHTTPClient) async throws -> (
        keys: [JSONWebKey], unread: String?
    ) {
        let now = Date()
        let next = keySet.withLock { set -> Result<Task<[JSONWebKey], any Error>?, ProviderFailure> in
            if let fetching = set.fetching { return .success(fetching) }
            if let failure = set.failure, now.timeIntervalSince(failure.at) < refetchInterval {
                guard let fetchedAt = set.fetchedAt else {
                    return .failure(
                        ProviderFailure(kind: .transient, code: .discoveryFailed, message: failure.message))
                }
                let wanted = refetch || now.timeIntervalSince(fetchedAt) >= maximumAge
                return wanted
                    ? .failure(ProviderFailure(kind: .transient, code: .discoveryFailed, message: failure.message))
                    : .success(nil)
            }
            if let fetchedAt = set.fetchedAt, now.timeIntervalSince(fetchedAt) < maximumAge {
                guard refetch else { return .success(nil) }
                if let last = set.refetchedAt, now.timeIntervalSince(last) < refetchInterval { return .success(nil) }
                set.refetchedAt = now
            }
            let fetching = Task { [self] () async throws -> [JSONWebKey] in
                do {
                    let keys = try await Self.fetch(jwks, over: http)
                    self.keySet.withLock { set in
                        set = KeySet(keys: keys, fetchedAt: Date(), refetchedAt: set.refetchedAt)
                    }
                    return keys
                } catch {
                    self.keySet.withLock { set in
                        set.fetching = nil
                        set.failure = (Date(), "\(error)")
                    }
                    throw error
                }
            }
            set.fetching = fetching
            return .success(fetching)
        }
        let held = keySet.withLock { $0.fetchedAt != nil ? $0.keys : nil }
        let task: Task<[JSONWebKey], any Error>?
        switch next {
        case .success(let fetching): task = fetching
        case .failure(let failure):
            guard let held else { throw failure }
            return (held, failure.message)
        }
        guard let task else { return (held ?? [], nil) }
        do {
            return (try await task.value, nil)
        } catch {
            // Keys read before go on serving while the set cannot be read again.
            guard let held else { throw error }
            return (held, "\(error)")
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
