import Synchronization
import TokenVaultCore

/// Refreshes that a storage error ended: the database went away in the middle of one. Its
/// journal write may have committed without the process hearing so (the connection was lost
/// before `COMMIT` was acknowledged), which leaves an attempt of this process open and the
/// credential's `refresh_at` at the end of the lease: left to the due list, it would wait a lease
/// period (minutes) while its token expires. The scheduler resumes those (`RefreshScheduler`,
/// `restartStranded`, `RefreshReason.resumption`): only the attempt still open for the
/// credential's generation and refresh token is resumed, inside the journalling transaction;
/// nothing is started anew that the due list would have held back (a backoff, a pause, a newer
/// generation), and the rest are dropped: the due list has them as before.
///
/// Each credential waits `pause` after its first failure, doubling with each failure in a row up
/// to `longestPause` (or until its provider reopens: `add(_:notBefore:)`). A run the scheduler
/// started that ends without a storage error forgets it (`settle`).
final class StrandedRefreshes: Sendable {
    private struct Entry {
        var failures: Int
        var readyAt: ContinuousClock.Instant
        /// Taken by the scheduler and not yet ended.
        var running = false
    }

    private struct State {
        var entries: [CredentialID: Entry] = [:]
        /// When the scheduler's last `take` said the next wait ends (nil: none waiting): it sleeps
        /// no longer than that, so an entry ready before it must wake it.
        var plannedWake: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    let pause: Duration
    let longestPause: Duration

    init(pause: Duration = .seconds(1), longestPause: Duration = .seconds(60)) {
        self.pause = pause
        self.longestPause = longestPause
    }

    /// The refresh of `id` ended on a storage error (or, resuming, found its provider paused
    /// until `notBefore`). True when the scheduler must be woken to learn of it: its wait ends
    /// before the one the scheduler sleeps for (during an outage, failures do not wake it one by one).
    @discardableResult
    func add(_ id: CredentialID, now: ContinuousClock.Instant = .now, notBefore: ContinuousClock.Instant? = nil)
        -> Bool
    {
        state.withLock { state in
            // A pause is no failure of the database: it does not lengthen the next wait.
            let failures = (state.entries[id]?.failures ?? 0) + (notBefore == nil ? 1 : 0)
            let backoff = now + min(longestPause, pause * (1 << min(max(failures, 1) - 1, 20)))
            let readyAt = max(backoff, notBefore ?? backoff)
            state.entries[id] = Entry(failures: failures, readyAt: readyAt)
            guard let planned = state.plannedWake, planned <= readyAt else {
                state.plannedWake = readyAt
                return true
            }
            return false
        }
    }

    /// The resumption the scheduler started for `id` ended without a storage error: forgotten.
    /// (An entry waiting again, put back by its own run, stays; other runs of the credential
    /// leave it to the scheduler, which forgets it once the journal shows nothing to resume.)
    func settle(_ id: CredentialID) {
        state.withLock { state in
            guard state.entries[id]?.running == true else { return }
            state.entries[id] = nil
            if state.entries.isEmpty { state.plannedWake = nil }
        }
    }

    var isEmpty: Bool { state.withLock { $0.entries.isEmpty } }

    /// Up to `limit` credentials whose wait is over and that are neither running nor in
    /// `skipping` (in flight again), longest waiting first, marked running; and when the next
    /// wait ends (nil: none waiting), which the scheduler sleeps until at most. One in flight is
    /// looked at again a second later at the latest (a token read's run does not wake it).
    func take(limit: Int, skipping: Set<CredentialID> = [], now: ContinuousClock.Instant = .now) -> (
        ids: [CredentialID], nextAt: ContinuousClock.Instant?
    ) {
        state.withLock { state in
            var ready: [(CredentialID, ContinuousClock.Instant)] = []
            var next: ContinuousClock.Instant?
            for (id, entry) in state.entries where !entry.running {
                if skipping.contains(id) {
                    let again = max(entry.readyAt, now + .seconds(1))
                    next = min(next ?? again, again)
                } else if entry.readyAt <= now {
                    ready.append((id, entry.readyAt))
                } else {
                    next = min(next ?? entry.readyAt, entry.readyAt)
                }
            }
            let taken = ready.sorted { $0.1 < $1.1 }.prefix(max(0, limit)).map(\.0)
            for id in taken { state.entries[id]?.running = true }
            state.plannedWake = next
            return (taken, next)
        }
    }

    /// A taken credential that did not start (its refresh was in flight): taken again next time.
    func putBack(_ id: CredentialID) { state.withLock { $0.entries[id]?.running = false } }
}
