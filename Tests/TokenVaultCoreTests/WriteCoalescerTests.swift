import Foundation
import Synchronization
import Testing
import TokenVaultTesting

@testable import TokenVaultCore

/// Group commit runs as many transactions at once as the store takes: one on SQLite, one per
/// writer connection on PostgreSQL, where each transaction carries one write and their flushes
/// overlap.
@Suite struct WriteCoalescerTests {
    /// Counts the coalescer's transactions under way at the same moment: each runs in a call of
    /// the executor, on a thread of its own (the memory store still runs their bodies one at a
    /// time, under its lock; what is counted is the coalescer's side).
    final class OverlapProbe: BlockingExecutor {
        private let inside = Atomic<Int>(0)
        private let most = Atomic<Int>(0)
        var concurrent: Int { inside.load(ordering: .relaxed) }
        var mostAtOnce: Int { most.load(ordering: .relaxed) }

        func run<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
            try await ThreadExecutor().run { [self] in
                _ = most.max(inside.add(1, ordering: .relaxed).newValue, ordering: .relaxed)
                defer { inside.subtract(1, ordering: .relaxed) }
                return try body()
            }
        }
    }

    /// The first write holds its transaction until a second transaction has begun, or `patience`
    /// has passed; the rest just write.
    static func run(transactions: Int, writes: Int, patience: Double) async throws -> OverlapProbe {
        let probe = OverlapProbe()
        let coalescer = WriteCoalescer(
            store: InMemoryStore(), executor: probe, maximumBatch: 1, transactions: transactions)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await coalescer.write(.full) { _ in
                    let deadline = Date().addingTimeInterval(patience)
                    while probe.concurrent < 2, Date() < deadline { usleep(1000) }
                }
            }
            for _ in 1..<writes {
                group.addTask { try await coalescer.write(.normal) { _ in } }
            }
            try await group.waitForAll()
        }
        return probe
    }

    @Test func severalTransactionsRunAtOnceWhenTheStoreTakesThem() async throws {
        let probe = try await Self.run(transactions: 4, writes: 16, patience: 30)
        #expect(probe.mostAtOnce >= 2)
        #expect(probe.mostAtOnce <= 4)
    }

    @Test func oneTransactionAtATimeByDefault() async throws {
        let probe = try await Self.run(transactions: 1, writes: 16, patience: 0.5)
        #expect(probe.mostAtOnce == 1)
    }
}
