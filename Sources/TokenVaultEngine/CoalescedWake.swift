import Synchronization

/// Passes many pokes on as one signal at most every `interval`: every node of a shared vault
/// hears of every other node's changes (hundreds a second under load), and waking the scheduler
/// for each would run a due scan for each. A change made elsewhere is refreshed by the node that
/// made it; the others only need to look soon, not at once.
final class CoalescedWake: Sendable {
    private let interval: Duration
    private let signal: @Sendable () -> Void
    private let scheduled = Atomic<Bool>(false)
    private let sent = Atomic<Int>(0)

    init(interval: Duration, signal: @escaping @Sendable () -> Void) {
        self.interval = interval
        self.signal = signal
    }

    /// Signals once `interval` from now, unless a signal is already due by then.
    func poke() {
        guard scheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        Task { [self] in
            try? await Task.sleep(for: interval)
            scheduled.store(false, ordering: .releasing)
            sent.add(1, ordering: .relaxed)
            signal()
        }
    }

    /// Signals passed on so far.
    var signals: Int { sent.load(ordering: .relaxed) }
}
