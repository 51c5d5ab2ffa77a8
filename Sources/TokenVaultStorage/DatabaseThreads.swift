import NIOPosix

/// Where SQLite's blocking calls run: threads of the database's own, never the Swift concurrency
/// pool. On Linux that pool and Dispatch's global queues share a few threads (two on a two-core
/// machine), so one statement waiting for a lock or a flush there stalls every task of the
/// process. The backend hops here itself, at the moment it takes a connection, so its callers
/// simply `await` (and a read its row cache answers does not hop at all). PostgreSQL needs no
/// such threads: its statements are awaited (`PostgresLink`).
final class DatabaseThreads: Sendable {
    private let pool: NIOThreadPool

    init(threads: Int) {
        pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
    }

    func run<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await pool.runIfActive(body)
    }

    deinit {
        pool.shutdownGracefully { _ in }
    }
}
