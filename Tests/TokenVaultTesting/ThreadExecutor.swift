import Foundation

/// Runs each call on a thread of its own: for tests whose blocking work waits a long time on
/// purpose. On Linux Dispatch's global queues and the Swift concurrency pool share their
/// threads (two on a two-core machine), so a long wait there stalls every other test's tasks.
public struct ThreadExecutor: Sendable {
    public init() {}

    public func run<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Swift.Result { try body() }) }
        }
    }
}
