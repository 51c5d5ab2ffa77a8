import Dispatch
import Synchronization

/// Lends connections to one holder each, first come first served: SQLite's one writer, which
/// async transactions and blocking callers share, and PostgreSQL's pools of readers and writers.
/// A task waits for a connection suspended, so a transaction suspended on SQLite's
/// `TransactionThread` is never stuck behind another caller blocking that thread; a blocking
/// caller (SQLite's migrations, a key term's write) waits on its own thread.
package final class ConnectionLender<Connection: AnyObject & Sendable>: Sendable {
    private final class Handoff: @unchecked Sendable {
        let ready = DispatchSemaphore(value: 0)
        var connection: Connection?
    }

    private enum Waiter {
        case task(CheckedContinuation<Connection, Never>)
        case thread(Handoff)
    }

    private struct State {
        var idle: [Connection]
        var waiters: [Waiter] = []
    }

    /// Every connection, lent or not.
    package let connections: [Connection]
    private let state: Mutex<State>

    package init(_ connections: [Connection]) {
        precondition(!connections.isEmpty, "a lender needs a connection")
        self.connections = connections
        state = Mutex(State(idle: connections))
    }

    /// A free connection, waited for suspended; `giveBack` it when done.
    package func take() async -> Connection {
        await withCheckedContinuation { (lent: CheckedContinuation<Connection, Never>) in
            let free = state.withLock { state -> Connection? in
                if let free = state.idle.popLast() { return free }
                state.waiters.append(.task(lent))
                return nil
            }
            if let free { lent.resume(returning: free) }
        }
    }

    /// A free connection, waited for blocking this thread (never the concurrency pool or an
    /// event loop); `giveBack` it when done.
    package func takeBlocking() -> Connection {
        let handoff = Handoff()
        let free = state.withLock { state -> Connection? in
            if let free = state.idle.popLast() { return free }
            state.waiters.append(.thread(handoff))
            return nil
        }
        if let free { return free }
        handoff.ready.wait()
        return handoff.connection!
    }

    /// Hands `connection` to the first waiter, or keeps it for the next caller.
    package func giveBack(_ connection: Connection) {
        let waiter = state.withLock { state -> Waiter? in
            guard !state.waiters.isEmpty else {
                state.idle.append(connection)
                return nil
            }
            return state.waiters.removeFirst()
        }
        switch waiter {
        case .task(let lent): lent.resume(returning: connection)
        case .thread(let handoff):
            handoff.connection = connection
            handoff.ready.signal()
        case nil: break
        }
    }

    /// Runs `body` with a connection, waited for suspended.
    package func withConnection<Result>(_ body: (Connection) async throws -> Result) async rethrows -> Result {
        let connection = await take()
        defer { giveBack(connection) }
        return try await body(connection)
    }

    /// Runs `body` with a connection, waited for blocking this thread.
    package func withConnection<Result>(_ body: (Connection) throws -> Result) rethrows -> Result {
        let connection = takeBlocking()
        defer { giveBack(connection) }
        return try body(connection)
    }
}
