import NIOCore
import NIOPosix
import TokenVaultCore
import TokenVaultLedger

/// Runs blocking work (every SQLite call, Argon2id) on NIO's blocking thread pool, never on an
/// event-loop thread and never on the Swift concurrency cooperative pool. The daemon hands it to
/// the vault as its executor, so the ledger's writes run there too.
public struct BlockingWork: BlockingExecutor {
    public init() {}

    public func run<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await Self.run(body)
    }

    /// Gives the pool `waitingThreads` threads beyond one per core, for calls that mostly wait: a
    /// PostgreSQL statement holds its thread until the server answers, so with a pool of one
    /// thread per core the connections idle while the threads wait. Takes effect only before
    /// the pool is first used; `serve` calls it once, first thing.
    public static func reserve(waitingThreads: Int) {
        guard waitingThreads > 0 else { return }
        NIOSingletons.blockingPoolThreadCountSuggestion = System.coreCount + waitingThreads
    }

    static func run<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await NIOThreadPool.singleton.runIfActive(body)
    }
}
