import Synchronization
import TokenVaultCore

/// Tokens derived by RFC 8693 exchanges, kept in memory only, per credential (its creation and
/// generation) and request: a caller asking again gets the same token while it has `margin`
/// seconds left, and a refresh of the credential (a new generation) or a credential deleted and
/// stored again (another creation) makes the next ask derive a new one. Bounded: past `capacity`
/// entries the expired ones go, and if none had, all of them.
final class DerivedTokens: Sendable {
    struct Key: Hashable, Sendable {
        var credential: CredentialID
        var createdAt: Timestamp
        var generation: Int64
        var request: TokenExchangeRequest
    }

    static let capacity = 10_000
    /// A derived token is handed out again only with at least this long to live.
    static let margin = 60.0

    private let tokens = Mutex<[Key: DerivedToken]>([:])

    func token(for key: Key, now: Timestamp) -> DerivedToken? {
        tokens.withLock { tokens in
            guard let token = tokens[key] else { return nil }
            guard let expiresAt = token.expiresAt, expiresAt.seconds - now.seconds >= Self.margin else {
                tokens[key] = nil
                return nil
            }
            return token
        }
    }

    /// Keeps `token` unless it has no known expiry or too little left to be handed out again.
    func keep(_ token: DerivedToken, for key: Key, now: Timestamp) {
        guard let expiresAt = token.expiresAt, expiresAt.seconds - now.seconds >= Self.margin else { return }
        tokens.withLock { tokens in
            if tokens.count >= Self.capacity {
                tokens = tokens.filter { ($0.value.expiresAt?.seconds ?? 0) - now.seconds >= Self.margin }
                if tokens.count >= Self.capacity { tokens.removeAll() }
            }
            tokens[key] = token
        }
    }
}
