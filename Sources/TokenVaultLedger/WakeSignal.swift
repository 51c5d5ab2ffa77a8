import Synchronization
import TokenVaultCore

/// Lets a loop sleep until a deadline or until something changes, whichever comes first: the
/// refresh scheduler (a sooner credential arrived, a refresh finished), the audit recorder (a row
/// to write). A signal sent while nobody waits is kept, so a wake-up is never lost between
/// checking and sleeping; a loop with nothing to do sleeps instead of polling.
public final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    public init() {}

    /// Whether a loop is asleep on this signal now (tests wait for it before they change
    /// something it must wake for).
    public var isWaited: Bool { state.withLock { $0.waiter != nil } }

    public func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns after `seconds`, on a signal, or on cancellation.
    public func wait(seconds: Double) async {
        guard seconds > 0 else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: .seconds(seconds)) }
            group.addTask { await self.waitForSignal() }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForSignal() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiter?.resume()
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
