import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultStorage

/// Connections lent to one holder at a time, tasks waiting suspended and blocking callers on
/// their threads: SQLite's one writer, shared by transactions whose bodies await (the ledger's)
/// and by blocking callers (migrations, key terms, settings), and PostgreSQL's pools. A
/// transaction suspended in the middle of its body never lets another begin on its connection.
@Suite struct ConnectionLenderTests {
    final class Connection: Sendable {}

    /// Tasks and a blocking thread take the one connection one after the other, never two at once.
    @Test func tasksAndBlockingCallersNeverHoldAConnectionTogether() async throws {
        let lender = ConnectionLender([Connection()])
        let holders = Holders()
        let blockingDone = Atomic<Int>(0)
        let thread = Thread {
            for _ in 0..<50 { lender.withConnection { _ in holders.hold() } }
            blockingDone.store(1, ordering: .releasing)
        }
        thread.start()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<25 {
                        let connection = await lender.take()
                        holders.hold()
                        try await Task.sleep(for: .microseconds(100))
                        lender.giveBack(connection)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await waitUntil { blockingDone.load(ordering: .acquiring) == 1 })
        #expect(holders.overlaps.load(ordering: .relaxed) == 0)
    }

    /// Three connections for twelve tasks: at most three lent at once, every one given back.
    @Test func aPoolLendsEachConnectionToOneHolder() async throws {
        let lender = ConnectionLender([Connection(), Connection(), Connection()])
        let lent = Lent()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    for _ in 0..<20 {
                        let connection = await lender.take()
                        let id = ObjectIdentifier(connection)
                        lent.take(id)
                        try await Task.sleep(for: .microseconds(50))
                        lent.giveBack(id)
                        lender.giveBack(connection)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(lent.clashes.load(ordering: .relaxed) == 0)
        #expect(Set((0..<3).map { _ in ObjectIdentifier(lender.takeBlocking()) }).count == 3)
    }

    /// The connections lent now, and how often one was lent while already lent.
    final class Lent: Sendable {
        let ids = Mutex<Set<ObjectIdentifier>>([])
        let clashes = Atomic<Int>(0)

        func take(_ id: ObjectIdentifier) {
            if !ids.withLock({ $0.insert(id).inserted }) { clashes.add(1, ordering: .relaxed) }
        }

        func giveBack(_ id: ObjectIdentifier) { ids.withLock { _ = $0.remove(id) } }
    }

    /// Counts the holders of the connection at each moment, and the moments there were two.
    final class Holders: Sendable {
        let inside = Atomic<Int>(0)
        let overlaps = Atomic<Int>(0)

        func hold() {
            if inside.add(1, ordering: .sequentiallyConsistent).newValue > 1 { overlaps.add(1, ordering: .relaxed) }
            usleep(200)
            inside.subtract(1, ordering: .sequentiallyConsistent)
        }
    }

    /// Concurrent write transactions whose bodies suspend half-way, with blocking writes of
    /// settings beside them: every transaction commits whole (a second BEGIN on the connection
    /// while one is open would fail, and an interleaved save would land in the wrong transaction).
    @Test func transactionsThatSuspendMidwayCommitWhole() async throws {
        let fixture = try TestVault()
        let database = fixture.database
        let ids = try (0..<16).map { try CredentialID("turn/c\($0)") }
        for id in ids {
            try await fixture.vault.put(
                id, payload: try SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "p")
        }
        let rows = try await ids.asyncMap { try #require(try await database.record($0)) }
        let settings = Thread {
            for index in 0..<40 { try? database.setSettings(["turn.test": "\(index)"]) }
        }
        settings.start()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for row in rows {
                group.addTask {
                    try await database.write(durability: .normal) { writer in
                        var first = row
                        first.metadata.refreshFailures = 1
                        try await writer.save(first)
                        try await Task.sleep(for: .milliseconds(2))
                        var second = first
                        second.metadata.refreshFailures = 2
                        try await writer.save(second)
                    }
                }
            }
            try await group.waitForAll()
        }
        for id in ids { await #expect(try database.record(id)?.metadata.refreshFailures == 2) }
        #expect(try await waitUntil { (try? database.setting("turn.test")) == "39" })
    }
}
