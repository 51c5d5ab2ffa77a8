import NIOPosix

/// Runs blocking work (every SQLite call, Argon2id) on NIO's blocking thread pool, never on an
/// event-loop thread and never on the Swift concurrency cooperative pool.
enum BlockingWork {
    static func run<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await NIOThreadPool.singleton.runIfActive(body)
    }
}
