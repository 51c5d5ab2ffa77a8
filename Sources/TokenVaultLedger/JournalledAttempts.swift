import Synchronization
import TokenVaultCore

/// The refresh attempts this process journalled and has not closed: its calls out, its answers
/// not yet stored, and the attempts whose courier ended during the call (left open so that a
/// resumption gets the spooled answer back). After a failover the database may have lost their
/// journal rows, and with them the leases that keep other nodes from presenting the same refresh
/// tokens; the node journals them again before any node refreshes (`Vault.rejournal`).
final class JournalledAttempts: Sendable {
    private struct Entry {
        var attempt: RefreshAttempt
        /// When the courier ended during the call; nil while the call runs or its answer is held.
        var awaitingSince: Timestamp?
    }

    private let entries = Mutex<[String: Entry]>([:])

    /// Journalled, or resumed (the same attempt again): its call is out. It replaces any other
    /// remembered for the credential, which it superseded (one attempt is open per credential).
    func add(_ attempt: RefreshAttempt) {
        entries.withLock { entries in
            entries = entries.filter { $0.value.attempt.credentialID != attempt.credentialID }
            entries[attempt.attemptID] = Entry(attempt: attempt)
        }
    }

    func remove(_ attemptID: String) { _ = entries.withLock { $0.removeValue(forKey: attemptID) } }

    /// The courier ended during the call of `attemptID`, which stays open for a resumption.
    func awaitResumption(_ attemptID: String, since now: Timestamp) {
        entries.withLock { $0[attemptID]?.awaitingSince = now }
    }

    var all: [RefreshAttempt] { entries.withLock { $0.values.map(\.attempt) } }

    /// Forgets the attempts `isSettled` says are over, but keeps one awaiting a resumption for
    /// `awaitedSeconds` after its courier ended.
    func forget(
        now: Timestamp, keepingAwaitedFor awaitedSeconds: Double, where isSettled: (RefreshAttempt) -> Bool
    ) {
        entries.withLock { entries in
            entries = entries.filter { _, entry in
                guard isSettled(entry.attempt) else { return true }
                guard let since = entry.awaitingSince else { return false }
                return now.seconds - since.seconds < awaitedSeconds
            }
        }
    }
}
