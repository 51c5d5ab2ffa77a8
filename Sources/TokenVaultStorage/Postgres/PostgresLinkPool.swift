import Dispatch
import Synchronization

/// Connections lent to one caller at a time: the readers, and the writers that carry the
/// ledger's transactions side by side (on PostgreSQL each carries one write, so several
/// commits, each waiting for its flush, overlap instead of queueing behind one connection).
final class PostgresLinkPool: Sendable {
    let links: [PostgresLink]
    private let idle: Mutex<[Int]>
    private let slots: DispatchSemaphore

    init(_ links: [PostgresLink]) {
        precondition(!links.isEmpty, "a pool needs a connection")
        self.links = links
        idle = Mutex(Array(links.indices))
        slots = DispatchSemaphore(value: links.count)
    }

    /// Runs `body` on a free connection, waiting for one (on a blocking thread, never an event loop).
    func withLink<Result>(_ body: (PostgresLink) throws -> Result) rethrows -> Result {
        slots.wait()
        let index = idle.withLock { $0.removeLast() }
        defer {
            idle.withLock { $0.append(index) }
            slots.signal()
        }
        return try body(links[index])
    }

    /// Whether a connection's last attempt to connect failed moments ago.
    var isRefusing: Bool { links.contains(where: \.isRefusing) }

    func close() {
        for link in links { link.close() }
    }
}
