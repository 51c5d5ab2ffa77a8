import Synchronization
import TokenVaultCore

/// The refresh attempts this process journalled and has not closed: its calls out and its
/// answers not yet stored. After a failover the database may have lost their journal rows, and
/// with them the leases that keep other nodes from presenting the same refresh tokens; the node
/// journals them again before any node refreshes (`Vault.rejournal`).
final class JournalledAttempts: Sendable {
    private let attempts = Mutex<[String: RefreshAttempt]>([:])

    func add(_ attempt: RefreshAttempt) { attempts.withLock { $0[attempt.attemptID] = attempt } }

    func remove(_ attemptID: String) { _ = attempts.withLock { $0.removeValue(forKey: attemptID) } }

    var all: [RefreshAttempt] { attempts.withLock { Array($0.values) } }
}
