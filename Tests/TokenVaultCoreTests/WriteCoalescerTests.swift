import Foundation
import Synchronization
import Testing
import TokenVaultTesting

@testable import TokenVaultCore
@testable import TokenVaultLedger

/// Group commit runs as many transactions at once as the store takes: one on SQLite, one per
/// writer connection on PostgreSQL, where their flushes overlap. A group's claims reach the store
/// first; a group the store splits is retried one write at a time.
@Suite struct WriteCoalescerTests {
    /// The first write holds its transaction until a second transaction has begun, or `patience`
    /// has passed; the rest just write. The memory store counts the coalescer's transactions
    /// under way at once (it runs their bodies one at a time, under its lock; what is counted is
    /// the coalescer's side).
    static func run(transactions: Int, writes: Int, patience: Double) async throws -> InMemoryStore {
        let probe = InMemoryStore()
        let coalescer = WriteCoalescer(store: probe, maximumBatch: 1, transactions: transactions)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await coalescer.write(.full) { _ in
                    let deadline = Date().addingTimeInterval(patience)
                    while probe.writesAtOnce < 2, Date() < deadline { usleep(1000) }
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
        #expect(probe.mostWritesAtOnce >= 2)
        #expect(probe.mostWritesAtOnce <= 4)
    }

    @Test func oneTransactionAtATimeByDefault() async throws {
        let probe = try await Self.run(transactions: 1, writes: 16, patience: 0.5)
        #expect(probe.mostWritesAtOnce == 1)
    }

    /// Queues `writes` behind a first write that holds the only transaction until they are all
    /// queued, so that they form groups in the order given; returns each write's result and the
    /// groups the store saw (claims, writes).
    static func queued(
        _ writes: [[CredentialID]], groupsUnclaimed: Bool = true,
        observe: @escaping @Sendable ([CredentialID], Int) throws -> Void = { _, _ in }
    ) async throws -> (results: [Int], groups: [(claims: [CredentialID], writes: Int)]) {
        let store = InMemoryStore()
        let groups = Mutex<[(claims: [CredentialID], writes: Int)]>([])
        store.observeGroups { claims, count in
            groups.withLock { $0.append((claims, count)) }
            try observe(claims, count)
        }
        let coalescer = WriteCoalescer(
            store: store, maximumBatch: 64, transactions: 1,
            groupsUnclaimed: groupsUnclaimed)
        let release = Atomic<Bool>(false)
        let holding = Atomic<Bool>(false)
        let first = Task {
            try await coalescer.write(.normal) { _ in
                holding.store(true, ordering: .relaxed)
                while !release.load(ordering: .relaxed) { usleep(1000) }
            }
        }
        while !holding.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(1)) }
        var tasks: [Task<Int, any Error>] = []
        for (index, claims) in writes.enumerated() {
            tasks.append(Task { try await coalescer.write(.normal, claiming: claims) { _ in index } })
            while coalescer.queued < index + 1 { try await Task.sleep(for: .milliseconds(1)) }
        }
        release.store(true, ordering: .relaxed)
        try await first.value
        var results: [Int] = []
        for task in tasks { results.append(try await task.value) }
        // The first write's own transaction is not one of the groups asked about.
        return (results, Array(groups.withLock { $0 }.dropFirst()))
    }

    static func claims(_ names: String...) throws -> [CredentialID] {
        try names.map { try CredentialID("pay/\($0)") }
    }

    @Test func aGroupsClaimsReachTheStoreBeforeItsWrites() async throws {
        let (results, groups) = try await Self.queued([try Self.claims("a"), try Self.claims("b", "c"), []])
        #expect(results == [0, 1, 2])
        #expect(groups.count == 1)
        #expect(groups.first?.claims == (try Self.claims("a", "b", "c")))
        #expect(groups.first?.writes == 3)
    }

    /// A store that cannot commit a group as one (it found a row other than it read, or a write
    /// failed half-way): each write runs again alone, unclaimed, and gets its own result.
    @Test func aGroupTheStoreSplitsIsRetriedOneWriteAtATime() async throws {
        let (results, groups) = try await Self.queued([
            try Self.claims("a"), try Self.claims("b"), try Self.claims("c"),
        ]) {
            _, writes in
            if writes > 1 { throw WriteGroupSplit("a row changed since it was read") }
        }
        #expect(results == [0, 1, 2])
        #expect(groups.map(\.writes) == [3, 1, 1, 1])
        #expect(groups.dropFirst().allSatisfy { $0.claims.isEmpty })
    }

    /// Where several processes write (PostgreSQL), a write that claims nothing takes its locks in
    /// its own order: it goes alone, and claimed writes around it form their own groups.
    @Test func unclaimedWritesGoAloneWhereSeveralProcessesWrite() async throws {
        let writes = [try Self.claims("a"), try Self.claims("b"), [], try Self.claims("c"), []]
        let (results, groups) = try await Self.queued(writes, groupsUnclaimed: false)
        #expect(results == [0, 1, 2, 3, 4])
        #expect(groups.map(\.writes) == [2, 1, 1, 1])
        let (_, together) = try await Self.queued(writes)
        #expect(together.map(\.writes) == [5])
    }
}
