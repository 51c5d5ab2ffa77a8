import Synchronization
import TokenVaultCore

/// Refreshes that a storage error ended: the database went away in the middle of one. Its
/// journal write may have committed without the process hearing so (the connection was lost
/// before `COMMIT` was acknowledged), which leaves an attempt of this process open and the
/// credential's `refresh_at` at the end of the lease: left to the due list, it would wait a lease
/// period (minutes) while its token expires. The scheduler resumes those (`RefreshScheduler`,
/// `restartStranded`, `RefreshReason.resumption`): only the attempt of this process still open
/// for the credential's generation and refresh token is resumed, inside the journalling
/// transaction; nothing is started anew that the due list would have held back (a backoff, a
/// pause, a newer generation), and the rest are dropped: the due list has them as before. Each credential waits `pause` after its first
/// failure, doubling with each failure in a row up to `longestPause`; an end without a storage
/// error (`settle`) forgets it.
final class StrandedRefreshes: Sendable {
    private struct Entry {
        var failures: Int
        var readyAt: ContinuousClock.Instant
        /// Taken by the scheduler and not yet ended.
        var running = false
    }

    private let entries = Mutex<[CredentialID: Entry]>([:])
    let pause: Duration
    let longestPause: Duration

    init(pause: Duration = .seconds(1), longestPause: Duration = .seconds(60)) {
        self.pause = pause
        self.longestPause = longestPause
    }

    /// The refresh of `id` ended on a storage error. True when its wait ends before every other
    /// entry's (the scheduler, which sleeps until the earliest, must be woken to learn of it):
    /// during an outage each failure does not wake it again.
    @discardableResult
    func add(_ id: CredentialID, now: ContinuousClock.Instant = .now) -> Bool {
        entries.withLock { entries in
            let failures = (entries[id]?.failures ?? 0) + 1
            let readyAt = now + min(longestPause, pause * (1 << min(failures - 1, 20)))
            let earliest = entries.values.lazy.filter { !$0.running }.map(\.readyAt).min()
            entries[id] = Entry(failures: failures, readyAt: readyAt)
            return earliest.map { readyAt < $0 } ?? true
        }
    }

    /// The refresh of `id` ended without a storage error (or another run will see to it).
    func settle(_ id: CredentialID) {
        entries.withLock { entries in
            if !entries.isEmpty { entries[id] = nil }
        }
    }

    var isEmpty: Bool { entries.withLock { $0.isEmpty } }

    /// Up to `limit` credentials whose wait is over and that are neither running nor in
    /// `skipping` (in flight again: that run settles them), longest waiting first, marked
    /// running; and the seconds until the next wait ends (nil: none waiting).
    func take(limit: Int, skipping: Set<CredentialID> = [], now: ContinuousClock.Instant = .now) -> (
        ids: [CredentialID], nextIn: Double?
    ) {
        entries.withLock { entries in
            var ready: [(CredentialID, ContinuousClock.Instant)] = []
            var next: ContinuousClock.Instant?
            for (id, entry) in entries where !entry.running && !skipping.contains(id) {
                if entry.readyAt <= now {
                    ready.append((id, entry.readyAt))
                } else {
                    next = min(next ?? entry.readyAt, entry.readyAt)
                }
            }
            let taken = ready.sorted { $0.1 < $1.1 }.prefix(max(0, limit)).map(\.0)
            for id in taken { entries[id]?.running = true }
            return (taken, next.map { max(0.001, ($0 - now) / .seconds(1)) })
        }
    }

    /// A taken credential that did not start (its refresh was in flight): taken again next time.
    func putBack(_ id: CredentialID) { entries.withLock { $0[id]?.running = false } }
}
