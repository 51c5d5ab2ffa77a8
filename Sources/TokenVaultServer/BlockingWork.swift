import NIOPosix
import TokenVaultCore

/// Runs blocking work (every SQLite call, Argon2id) on NIO's blocking thread pool, never on an
/// event-loop thread and never on the Swift concurrency cooperative pool. The daemon hands it to
/// the vault as its executor, so the ledger's writes run there too.
public struct BlockingWork: BlockingExecutor {
    public init() {}

    public func run<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await Self.run(body)
    }

    static func run<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await NIOThreadPool.singleton.runIfActive(body)
    }
}
