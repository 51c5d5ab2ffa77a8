import NIOPosix

/// Runs blocking work that is not the database's (the group database, the file system) on NIO's
/// blocking thread pool, never on an event-loop thread and never on the Swift concurrency pool.
/// (The database backends run their own calls on threads of their own.)
enum BlockingWork {
    static func run<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await NIOThreadPool.singleton.runIfActive(body)
    }
}
