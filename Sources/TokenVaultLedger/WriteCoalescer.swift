import Synchronization
import TokenVaultCore

/// Group commit: writes that arrive while a transaction is being committed wait and go into
/// the next one together, so one `fsync` covers many refreshes. Each write runs inside its own
/// savepoint, so one that throws rolls back alone; a caller resumes only after the
/// transaction holding its write has committed (durably, when any write in it asked for
/// `.full`), which keeps "durable before visible" intact.
///
/// A write may name the credentials it is about to change (its claims); the group's claims
/// go to the store first (`CredentialWriter.prefetch`), so that a store whose every statement is
/// a round trip (PostgreSQL) locks and reads the whole group's rows at once and writes them
/// back together (`finishGroup`). When the store cannot commit a group as one
/// (`WriteGroupSplit`), each of its writes is run again in a transaction of its own, unclaimed.
///
/// Owned by `Vault`: every credential write, puts included, goes through it. The store runs each
/// transaction on a thread of its own (`CredentialStore.write`). Up to `transactions` of them
/// run at once: one on SQLite (one writer, large groups), a few on
/// PostgreSQL (a connection each, so one group's commit overlaps the next).
final class WriteCoalescer: Sendable {
    private struct Pending: Sendable {
        let durability: Durability
        let claims: [CredentialID]
        let body: @Sendable (any CredentialWriter) async throws -> any Sendable
        let complete: @Sendable (Result<any Sendable, any Error>) -> Void
    }

    private struct State {
        var pending: [Pending] = []
        /// Transactions being committed (each drains the queue until it is empty).
        var draining = 0
    }

    private let store: any CredentialStore
    private let state = Mutex(State())
    /// Writes per transaction at most (bounds how long one commit holds the writer).
    private let maximumBatch: Int
    /// Transactions committed at once at most.
    private let transactions: Int
    /// Whether a write that claims nothing may share a transaction. Not where several processes
    /// write: its locks are taken in the order its body asks for them, and two processes' groups
    /// taking the same rows in different orders deadlock; a group's claims never wait for a lock.
    private let groupsUnclaimed: Bool

    init(
        store: any CredentialStore, maximumBatch: Int = 256, transactions: Int = 1, groupsUnclaimed: Bool = true
    ) {
        self.store = store
        self.maximumBatch = maximumBatch
        self.transactions = max(1, transactions)
        self.groupsUnclaimed = groupsUnclaimed
    }

    /// Writes waiting for a transaction (tests).
    var queued: Int { state.withLock { $0.pending.count } }

    func write<Result: Sendable>(
        _ durability: Durability, claiming claims: [CredentialID] = [],
        _ body: @escaping @Sendable (any CredentialWriter) async throws -> Result
    ) async throws -> Result {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Result, any Error>) in
            let pending = Pending(
                durability: durability, claims: claims, body: { try await body($0) },
                complete: { result in continuation.resume(with: result.map { $0 as! Result }) })
            let startDrain = state.withLock { state -> Bool in
                state.pending.append(pending)
                guard state.draining < transactions else { return false }
                state.draining += 1
                return true
            }
            if startDrain {
                Task.detached { [self] in await drain() }
            }
        }
    }

    /// Commits batches until the queue is empty.
    private func drain() async {
        while true {
            let batch = state.withLock { state -> [Pending] in
                var count = min(maximumBatch, state.pending.count)
                if !groupsUnclaimed, let first = state.pending.first {
                    // An unclaimed write alone; claimed ones together, up to the next unclaimed.
                    count =
                        first.claims.isEmpty
                        ? 1 : state.pending.prefix(count).prefix { !$0.claims.isEmpty }.count
                }
                let batch = Array(state.pending.prefix(count))
                state.pending.removeFirst(batch.count)
                if batch.isEmpty { state.draining -= 1 }
                return batch
            }
            guard !batch.isEmpty else { return }
            let results: [Result<any Sendable, any Error>]
            do {
                results = try await commit(batch, claims: batch.flatMap(\.claims))
            } catch is WriteGroupSplit {
                var alone: [Result<any Sendable, any Error>] = []
                for pending in batch {
                    do {
                        alone.append(try await commit([pending], claims: []).first!)
                    } catch {
                        alone.append(.failure(error))
                    }
                }
                results = alone
            } catch {
                results = batch.map { _ in .failure(error) }
            }
            for (pending, result) in zip(batch, results) { pending.complete(result) }
        }
    }

    /// One transaction for `batch`, durable if any of its writes asks for it. Each write's own
    /// failure is its result; the transaction's failure is thrown.
    private func commit(_ batch: [Pending], claims: [CredentialID]) async throws -> [Result<any Sendable, any Error>] {
        let durability: Durability = batch.contains { $0.durability == .full } ? .full : .normal
        return try await store.write(durability: durability) { writer in
            if !claims.isEmpty { try await writer.prefetch(claims) }
            var results: [Result<any Sendable, any Error>] = []
            for pending in batch {
                do {
                    results.append(.success(try await writer.savepoint { try await pending.body(writer) }))
                } catch {
                    results.append(.failure(error))
                }
            }
            try await writer.finishGroup()
            return results
        }
    }
}
