import Synchronization
import TokenVaultCore

/// Refreshes that ended on a storage error: the database went away in the middle of one. Its
/// journal write may have committed without the node hearing so (the connection was lost before
/// `COMMIT` was acknowledged), and journalling moves the credential's `refresh_at` to the end of
/// the lease: left to the due list, the credential would wait a lease period (minutes) while its
/// token expires. The scheduler starts these again as recoveries, after a scan of its own went
/// through (the database answers again) and at least `pause` after the failure; journalling then
/// resumes the attempt with the same refresh token, or starts one when none was written.
final class StrandedRefreshes: Sendable {
    private let failedAt = Mutex<[CredentialID: ContinuousClock.Instant]>([:])
    /// At most one retry a second per credential, as the due list retries a failing scan.
    let pause: Duration

    init(pause: Duration = .seconds(1)) { self.pause = pause }

    /// The refresh of `id` could not run.
    func add(_ id: CredentialID) { failedAt.withLock { $0[id] = ContinuousClock.now } }

    var isEmpty: Bool { failedAt.withLock { $0.isEmpty } }

    /// Up to `limit` credentials whose pause is over, taken out (oldest failure first), and the
    /// seconds until the next pause ends (nil: none pausing; those left over the limit wait for a
    /// free slot, and a finishing refresh wakes the scheduler).
    func take(limit: Int, now: ContinuousClock.Instant = .now) -> (ids: [CredentialID], nextIn: Double?) {
        failedAt.withLock { failedAt in
            let ready = failedAt.filter { now - $0.value >= pause }.sorted { $0.value < $1.value }.prefix(max(0, limit))
            for (id, _) in ready { failedAt[id] = nil }
            let pausing = failedAt.values.filter { now - $0 < pause }
            return (ready.map(\.key), pausing.min().map { ($0 + pause - now) / .seconds(1) })
        }
    }
}
