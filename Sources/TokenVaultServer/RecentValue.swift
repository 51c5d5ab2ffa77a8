import Synchronization

/// A value computed at most once per `maximumAge` and shared by every caller meanwhile, and by
/// every caller that asks while it is being computed. Health and metrics are open to every
/// member of the socket's group: however often they are asked, the database is asked at most
/// once a second.
final class RecentValue<Value: Sendable>: Sendable {
    private struct State {
        var latest: (value: Value, at: ContinuousClock.Instant)?
        var running: Task<Value, any Error>?
    }

    private enum Next {
        case cached(Value)
        case wait(Task<Value, any Error>)
    }

    let maximumAge: Duration
    private let state = Mutex(State())

    init(maximumAge: Duration) { self.maximumAge = maximumAge }

    /// The last value if it is younger than `maximumAge`, without waiting or computing (for an
    /// event loop; nil: ask `get`).
    var recent: Value? {
        state.withLock { state in
            guard let latest = state.latest, ContinuousClock.now - latest.at < maximumAge else { return nil }
            return latest.value
        }
    }

    /// The value, computed by `compute` when the last one is older than `maximumAge`. A failure
    /// is not kept: the next caller computes again.
    func get(_ compute: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let next = state.withLock { state -> Next in
            if let latest = state.latest, ContinuousClock.now - latest.at < maximumAge { return .cached(latest.value) }
            if let running = state.running { return .wait(running) }
            let task = Task { try await compute() }
            state.running = task
            return .wait(task)
        }
        switch next {
        case .cached(let value):
            return value
        case .wait(let task):
            do {
                let value = try await task.value
                state.withLock { state in
                    guard state.running == task else { return }
                    state.running = nil
                    state.latest = (value, .now)
                }
                return value
            } catch {
                state.withLock { state in if state.running == task { state.running = nil } }
                throw error
            }
        }
    }
}
