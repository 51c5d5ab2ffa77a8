import Synchronization

/// A one-way gate for tests: tasks that `wait()` are held until the test calls `open()`. Holds a
/// provider call in flight for exactly as long as a test needs, with no sleeps to tune.
public final class Latch: Sendable {
    private struct State {
        var isOpen = false
        var waiting: [CheckedContinuation<Void, Never>] = []
        var arrived = 0
    }

    private let state = Mutex(State())

    public init() {}

    public var isOpen: Bool { state.withLock { $0.isOpen } }

    /// How many waits have begun (held or not).
    public var arrived: Int { state.withLock { $0.arrived } }

    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = state.withLock { state -> Bool in
                state.arrived += 1
                guard !state.isOpen else { return true }
                state.waiting.append(continuation)
                return false
            }
            if open { continuation.resume() }
        }
    }

    public func open() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isOpen = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
