/// Decides when a credential should be refreshed. Pure: time and randomness come in as
/// arguments, so every rule is testable with a fake clock. One planner per provider instance
/// (the shares, margins and default lifetimes are provider settings).
///
/// `refresh_at` = issue time + `lifetimeShare` of the lifetime (or the server's `refresh_in`),
/// never later than `expires_at - margin` nor than the refresh token's own expiry minus the
/// margin, minus random jitter of up to `jitterFraction` of the window so that credentials
/// issued together do not all refresh together.
public struct RefreshPlanner: Sendable, Equatable {
    public var lifetimeShare: Double
    public var margin: Double
    public var jitterFraction: Double
    /// Assumed lifetime when the provider gave none.
    public var defaultLifetime: Double

    public init(
        lifetimeShare: Double = 0.75, margin: Double = 60, jitterFraction: Double = 0.1, defaultLifetime: Double = 3600
    ) {
        self.lifetimeShare = lifetimeShare
        self.margin = margin
        self.jitterFraction = jitterFraction
        self.defaultLifetime = defaultLifetime
    }

    /// `jitter` is a number in 0..<1 (a fresh random one in production). Nil when the
    /// credential cannot be refreshed.
    public func refreshAt(
        issuedAt: Timestamp, expiresAt: Timestamp?, refreshIn: Double?, canRefresh: Bool, jitter: Double,
        refreshTokenExpiresAt: Timestamp? = nil
    ) -> Timestamp? {
        guard canRefresh else { return nil }
        let lifetime = expiresAt.map { $0.seconds - issuedAt.seconds } ?? defaultLifetime
        var offset = refreshIn.map { $0 > 0 ? $0 : lifetime * lifetimeShare } ?? lifetime * lifetimeShare
        // The margin never eats more than half of a short lifetime: a 60 s token with a 60 s
        // margin is refreshed half-way, not at once in a loop.
        for deadline in [expiresAt, refreshTokenExpiresAt].compactMap({ $0 }) {
            let window = deadline.seconds - issuedAt.seconds
            offset = min(offset, max(window - margin, window / 2))
        }
        offset -= offset * jitterFraction * min(max(jitter, 0), 1)
        return issuedAt.adding(seconds: max(offset, 0))
    }
}
