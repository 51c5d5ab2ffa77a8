import Foundation
import Synchronization
import Testing
import TokenVaultTesting

@testable import TokenVaultCore

/// Group commit runs as many transactions at once as the store takes: one on SQLite, one per
/// writer connection on PostgreSQL, where each transaction carries one write and their flushes
/// overlap.
@Suite struct WriteCoalescerTests {
    /// Counts the transactions inside `write` at the same moment (the memory store still runs
    /// their bodies one at a time, under its lock; what is counted is the coalescer's side).
    final class OverlapProbe: CredentialStore, Sendable {
        let base = InMemoryStore()
        private let inside = Atomic<Int>(0)
        private let most = Atomic<Int>(0)
        var concurrent: Int { inside.load(ordering: .relaxed) }
        var mostAtOnce: Int { most.load(ordering: .relaxed) }

        func write<Result>(durability: Durability, _ body: (any CredentialWriter) throws -> Result) throws -> Result {
            let now = inside.add(1, ordering: .relaxed).newValue
            _ = most.max(now, ordering: .relaxed)
            defer { inside.subtract(1, ordering: .relaxed) }
            return try base.write(durability: durability, body)
        }
        func record(_ id: CredentialID) throws -> SealedCredentialRecord? { try base.record(id) }
        func recordWithoutWaiting(_ id: CredentialID) throws -> SealedCredentialRecord? { try base.record(id) }
        func list(_ query: CredentialQuery) throws -> [CredentialMetadata] { try base.list(query) }
        func records(after: CredentialID?, limit: Int) throws -> [SealedCredentialRecord] {
            try base.records(after: after, limit: limit)
        }
        func records(notSealedWith term: UInt32, limit: Int) throws -> [SealedCredentialRecord] {
            try base.records(notSealedWith: term, limit: limit)
        }
        func auditEvents(after: Int64?, credentialID: CredentialID?, limit: Int) throws -> [StoredAuditEvent] {
            try base.auditEvents(after: after, credentialID: credentialID, limit: limit)
        }
        func auditChainEnds() throws -> [AuditChainEnd] { try base.auditChainEnds() }
        func dueCredentials(at now: Timestamp, limit: Int) throws -> [ScheduledCredential] {
            try base.dueCredentials(at: now, limit: limit)
        }
        func earliestRefreshAt() throws -> Timestamp? { try base.earliestRefreshAt() }
        func openAttempts(limit: Int) throws -> [RefreshAttempt] { try base.openAttempts(limit: limit) }
        func pruneFinishedAttempts(before: Timestamp, limit: Int) throws -> Int {
            try base.pruneFinishedAttempts(before: before, limit: limit)
        }
    }

    /// The first write holds its transaction until a second transaction has begun, or `patience`
    /// has passed; the rest just write.
    static func run(transactions: Int, writes: Int, patience: Double) async throws -> OverlapProbe {
        let probe = OverlapProbe()
        let coalescer = WriteCoalescer(
            store: probe, executor: ThreadExecutor(), maximumBatch: 1, transactions: transactions)
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
