import Synchronization
import TokenVaultCore

/// The registry of provider answers not yet committed: what `show`, health and metrics report
/// while `Vault` retries them (see `Vault+PendingCommits.swift`). A credential may have more than
/// one hold at once (a refresh's answer and then a code exchange's), each with its own retries.
final class PendingCommits: Sendable {
    private struct State {
        var holds: [CredentialID: [Int: PendingCommit]] = [:]
        var nextHold = 0
        var totals = Totals()
        /// Raised by `callRetriesNow`: every retry loop sleeping on its backoff wakes and tries.
        var retryCalls = 0
    }

    struct Totals: Sendable, Equatable {
        /// Commits of received tokens that failed (each retry counts).
        var failures = 0
        /// Held answers that were committed (or found superseded) after at least one failure.
        var recovered = 0
        /// Why the latest failed commit failed (never a token).
        var lastFailure: String?
    }

    private let state = Mutex(State())
    /// Holds in memory, readable without the lock: every token read asks `status`, and almost
    /// always there is nothing held, so the hot path is one atomic load.
    private let held = Atomic<Int>(0)
    /// Holds ever begun: a listing page kept from before one began shows no `pending_commit`.
    private let begun = Atomic<UInt64>(0)

    /// A number for a new hold (one write of received tokens).
    func newHold() -> Int {
        state.withLock { state in
            state.nextHold += 1
            return state.nextHold
        }
    }

    /// The credential's hold as people see it: since the oldest, the most failures, the latest error.
    func status(_ id: CredentialID) -> PendingCommit? {
        guard held.load(ordering: .acquiring) > 0 else { return nil }
        return state.withLock { state in
            guard let holds = state.holds[id]?.values, let first = holds.first else { return nil }
            return holds.reduce(first) { summary, hold in
                PendingCommit(
                    since: min(summary.since, hold.since), failures: max(summary.failures, hold.failures),
                    lastError: hold.since >= summary.since ? hold.lastError : summary.lastError,
                    nextAttemptAt: min(summary.nextAttemptAt, hold.nextAttemptAt))
            }
        }
    }

    /// The hold's own state (its retries' schedule).
    func hold(_ id: CredentialID, _ hold: Int) -> PendingCommit? { state.withLock { $0.holds[id]?[hold] } }

    /// Asks every hold's retry to happen now (the database is reachable again). Returns each hold
    /// with its failures so far: it has been tried once its failures rose or it is gone.
    func callRetriesNow() -> [(id: CredentialID, hold: Int, failures: Int)] {
        state.withLock { state in
            state.retryCalls += 1
            return state.holds.flatMap { id, holds in holds.map { (id, $0.key, $0.value.failures) } }
        }
    }

    var retryCalls: Int { state.withLock { $0.retryCalls } }

    /// Holds in memory, over every credential.
    var count: Int { held.load(ordering: .acquiring) }

    /// Holds begun since start-up.
    var begunCount: UInt64 { begun.load(ordering: .acquiring) }

    var snapshot: Totals { state.withLock { $0.totals } }

    /// Notes one more failed commit of `hold` and returns it as it now stands.
    @discardableResult
    func recordFailure(_ id: CredentialID, hold: Int, error: String, at now: Timestamp, retryAt: Timestamp)
        -> PendingCommit
    {
        state.withLock { state in
            state.totals.failures += 1
            state.totals.lastFailure = error
            var entry =
                state.holds[id]?[hold]
                ?? PendingCommit(since: now, failures: 0, lastError: error, nextAttemptAt: retryAt)
            if entry.failures == 0 {
                begun.add(1, ordering: .releasing)
                held.add(1, ordering: .releasing)
            }
            entry.failures += 1
            entry.lastError = error
            entry.nextAttemptAt = retryAt
            state.holds[id, default: [:]][hold] = entry
            return entry
        }
    }

    /// The hold was committed (or made moot by a newer generation): forget it.
    func clear(_ id: CredentialID, hold: Int) {
        state.withLock { state in
            guard state.holds[id]?.removeValue(forKey: hold) != nil else { return }
            held.subtract(1, ordering: .releasing)
            if state.holds[id]?.isEmpty == true { state.holds[id] = nil }
            state.totals.recovered += 1
        }
    }
}
