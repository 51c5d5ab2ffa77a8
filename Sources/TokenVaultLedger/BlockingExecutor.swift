import Dispatch
import TokenVaultCore

/// Runs blocking work (every database call) on threads made for it, never on the Swift
/// concurrency pool. The daemon passes NIO's blocking thread pool; Core has no pool of its own,
/// only this seam and a Dispatch-backed default for tools and tests.
public protocol BlockingExecutor: Sendable {
    func run<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result
}

/// Blocking work on Dispatch's global queue (command-line tools, tests, benchmarks).
public struct DispatchExecutor: BlockingExecutor {
    public init() {}

    public func run<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Swift.Result { try body() }) }
        }
    }
}
