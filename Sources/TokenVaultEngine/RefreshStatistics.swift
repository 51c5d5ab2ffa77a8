import Synchronization
import TokenVaultCore

/// The engine's counters, read by `/metrics`.
final class RefreshStatistics: Sendable {
    private let state = Mutex(RefreshCounters())

    var snapshot: RefreshCounters { state.withLock { $0 } }

    func record(_ change: (inout RefreshCounters) -> Void) { state.withLock { change(&$0) } }
}
