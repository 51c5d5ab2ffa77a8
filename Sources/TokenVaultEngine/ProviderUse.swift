import Synchronization

/// The calls using one provider object. Every slot holding that object shares it: a reload that
/// changes only an instance's planner, `expired_unit` or limits makes a new slot around the same
/// object, while calls that took the old slot are still running on it; a later reload that
/// removes or re-points the instance must wait for those calls too before the object is shut
/// down, so the count belongs to the object, not to the slot.
final class ProviderUse: Sendable {
    private struct State {
        var calls = 0
        var idle: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// A call takes the object (under the engine's table lock, so a replacement sees it).
    func enter() { state.withLock { $0.calls += 1 } }

    func leave() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.calls -= 1
            guard state.calls == 0 else { return [] }
            defer { state.idle = [] }
            return state.idle
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Returns once no call uses the object (call it after no slot in the table holds it).
    func whenIdle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                guard state.calls > 0 else { return true }
                state.idle.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }
}
