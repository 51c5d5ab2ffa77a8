import Synchronization

/// Group commit: writes that arrive while a transaction is being committed wait and go into
/// the next one together, so one `fsync` covers many refreshes. Each write runs inside its own
/// savepoint, so one that throws rolls back alone; a caller resumes only after the
/// transaction holding its write has committed (durably, when any write in it asked for
/// `.full`), which keeps "durable before visible" intact.
///
/// Owned by `Vault`: every credential write, puts included, goes through it. The transactions
/// run on the vault's `BlockingExecutor`, never on the Swift concurrency pool. Up to
/// `transactions` of them run at once: one on SQLite (one writer, large groups), several on
/// PostgreSQL (a connection each, one write each).
final class WriteCoalescer: Sendable {
    private struct Pending: Sendable {
        let durability: Durability
        let body: @Sendable (any CredentialWriter) throws -> any Sendable
        let complete: @Sendable (Result<any Sendable, any Error>) -> Void
    }

    private struct State {
        var pending: [Pending] = []
        /// Transactions being committed (each drains the queue until it is empty).
        var draining = 0
    }

    private let store: any CredentialStore
    private let executor: any BlockingExecutor
    private let state = Mutex(State())
    /// Writes per transaction at most (bounds how long one commit holds the writer).
    private let maximumBatch: Int
    /// Transactions committed at once at most.
    private let transactions: Int

    init(store: any CredentialStore, executor: any BlockingExecutor, maximumBatch: Int = 256, transactions: Int = 1) {
        self.store = store
        self.executor = executor
        self.maximumBatch = maximumBatch
        self.transactions = max(1, transactions)
    }

    func write<Result: Sendable>(
        _ durability: Durability, _ body: @escaping @Sendable (any CredentialWriter) throws -> Result
    ) async throws -> Result {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Result, any Error>) in
            let pending = Pending(
                durability: durability, body: { try body($0) },
                complete: { result in continuation.resume(with: result.map { $0 as! Result }) })
            let startDrain = state.withLock { state -> Bool in
                state.pending.append(pending)
                guard state.draining < transactions else { return false }
                state.draining += 1
                return true
            }
            if startDrain {
                Task.detached { [self] in
                    do {
                        try await executor.run { self.drain() }
                    } catch {
                        self.failAll(error)
                    }
                }
            }
        }
    }

    /// Commits batches until the queue is empty.
    private func drain() {
        while true {
            let batch = state.withLock { state -> [Pending] in
                let batch = Array(state.pending.prefix(maximumBatch))
                state.pending.removeFirst(batch.count)
                if batch.isEmpty { state.draining -= 1 }
                return batch
            }
            guard !batch.isEmpty else { return }
            let durability: Durability = batch.contains { $0.durability == .full } ? .full : .normal
            var results: [Result<any Sendable, any Error>] = []
            do {
                try store.write(durability: durability) { writer in
                    results = batch.map { pending in
                        Result { try writer.savepoint { try pending.body(writer) } }
                    }
                }
            } catch {
                results = batch.map { _ in .failure(error) }
            }
            for (pending, result) in zip(batch, results) { pending.complete(result) }
        }
    }

    private func failAll(_ error: any Error) {
        let batch = state.withLock { state -> [Pending] in
            defer {
                state.pending.removeAll()
                state.draining -= 1
            }
            return state.pending
        }
        for pending in batch { pending.complete(.failure(error)) }
    }
}
