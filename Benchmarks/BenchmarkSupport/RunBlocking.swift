import Dispatch
import Synchronization

/// Runs async work from synchronous benchmark code (a workload's timed closure) and waits for
/// it on the calling thread. The wait is part of what is measured, as it is for any caller.
public func runBlocking<Result: Sendable>(_ body: @escaping @Sendable () async throws -> Result) throws -> Result {
    let outcome = Mutex<Swift.Result<Result, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let result = await Swift.Result { try await body() }
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return try outcome.withLock { $0! }.get()
}

extension Swift.Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
