import Synchronization
import TokenVaultCore

/// Keeps token reads from driving a provider: a read whose `min_ttl` the token cannot meet may
/// trigger a refresh, but at most one per credential every `interval`, and none when the
/// current tokens came from such a refresh and live shorter than the `min_ttl` asked (refreshing
/// again cannot help: the caller gets `409 min_ttl_unreachable` instead of a refresh per read).
/// Scheduled and forced refreshes are not counted here. In memory: bounded by the credentials
/// read on demand lately.
final class OnDemandLimiter: Sendable {
    private struct Attempt {
        let at: ContinuousClock.Instant
        /// The generation the refresh produced, when it did.
        let produced: Int64?
        /// Why it did not, when it did not (a failure's code, or why nothing was sent): a read
        /// held back by the limit is told this, so it learns why the token is not fresh.
        let outcome: String?
    }

    let interval: Duration
    private let attempts = Mutex<[CredentialID: Attempt]>([:])

    init(interval: Duration) { self.interval = interval }

    /// Why `metadata`'s credential is not refreshed on demand now, or nil when it may be.
    func refusal(for metadata: CredentialMetadata, minimumTTL: Double, now: ContinuousClock.Instant = .now)
        -> String?
    {
        guard let last = attempts.withLock({ $0[metadata.id] }) else { return nil }
        if last.produced == metadata.generation, let lifetime = metadata.lifetime, lifetime < minimumTTL {
            return
                "the provider's tokens for \(metadata.id) live \(Int(lifetime)) s, less than min_ttl=\(Int(minimumTTL)) s; "
                + "refreshing cannot meet it"
        }
        if now - last.at < interval {
            return "on-demand refreshes of \(metadata.id) are limited to one per \(interval.components.seconds) s "
                + "(limits.on_demand_refresh_seconds)" + (last.outcome.map { "; the last one: \($0)" } ?? "")
        }
        return nil
    }

    /// An on-demand refresh of `id` was attempted now; `produced` is the generation it stored,
    /// `outcome` why it stored none.
    func record(_ id: CredentialID, produced: Int64?, outcome: String? = nil, now: ContinuousClock.Instant = .now) {
        attempts.withLock { attempts in
            attempts[id] = Attempt(at: now, produced: produced, outcome: outcome)
            // Forget what no longer limits anything, so memory follows the reads of the last hour.
            if attempts.count > 10_000 {
                let horizon = max(interval, .seconds(3600))
                attempts = attempts.filter { now - $0.value.at < horizon }
            }
        }
    }
}
