import Synchronization

/// The registry of provider answers not yet committed, by credential: what `show`, health and
/// metrics report while `Vault` retries them (see `Vault+PendingCommits.swift`).
final class PendingCommits: Sendable {
    private let entries = Mutex<[CredentialID: PendingCommit]>([:])
    private let totals = Mutex(Totals())

    struct Totals: Sendable, Equatable {
        /// Commits of received tokens that failed (each retry counts).
        var failures = 0
        /// Held answers that were committed after at least one failure.
        var recovered = 0
    }

    func status(_ id: CredentialID) -> PendingCommit? { entries.withLock { $0[id] } }

    var count: Int { entries.withLock { $0.count } }

    var snapshot: Totals { totals.withLock { $0 } }

    /// Notes one more failed commit for `id` and returns the entry as it now stands.
    @discardableResult
    func recordFailure(_ id: CredentialID, error: String, at now: Timestamp, retryAt: Timestamp) -> PendingCommit {
        totals.withLock { $0.failures += 1 }
        return entries.withLock { entries in
            var entry =
                entries[id] ?? PendingCommit(since: now, failures: 0, lastError: error, nextAttemptAt: retryAt)
            entry.failures += 1
            entry.lastError = error
            entry.nextAttemptAt = retryAt
            entries[id] = entry
            return entry
        }
    }

    /// The answer for `id` was committed (or made moot by a newer generation): forget it.
    func clear(_ id: CredentialID) {
        if entries.withLock({ $0.removeValue(forKey: id) }) != nil {
            totals.withLock { $0.recovered += 1 }
        }
    }
}
