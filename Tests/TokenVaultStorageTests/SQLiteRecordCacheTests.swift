import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultTesting

@testable import TokenVaultStorage

/// The SQLite node's cache of sealed rows: reads come from memory, and never a row older than
/// the last commit.
@Suite struct SQLiteRecordCacheTests {
    @Test func readsAreServedFromTheCacheAndEveryWriteReachesThem() async throws {
        let fixture = try TestVault()
        let id = try CredentialID("cache/a")
        let payload = try SamplePayloads.decode(SamplePayloads.tinkoff().json)
        try await fixture.vault.put(id, payload: payload, provider: "p")
        _ = try await fixture.vault.credential(id, opening: [.accessToken])  // read once: not kept yet
        let first = try await fixture.vault.credential(id, opening: [.accessToken])
        let before = fixture.database.cache.statistics
        #expect(try fixture.vault.credentialWithoutWaiting(id, opening: [.accessToken]).metadata == first.metadata)
        await #expect(try fixture.vault.credential(id, opening: [.accessToken]).metadata == first.metadata)
        #expect(fixture.database.cache.statistics.hits == before.hits + 2, "both reads came from memory")

        // A put of new tokens, read at once: the new generation, not the cached one.
        let replacement = SamplePayloads.oauth()
        try await fixture.vault.put(id, payload: try SamplePayloads.decode(replacement.json), provider: "p")
        let second = try await fixture.vault.credential(id, opening: [.accessToken])
        #expect(second.metadata.generation > first.metadata.generation)
        #expect(second.secrets.accessToken.revealString() == replacement.tokens[0])

        // A deletion, read at once: gone.
        try await fixture.vault.delete(id)
        #expect(throws: VaultError.self) { try fixture.vault.credentialWithoutWaiting(id, opening: [.accessToken]) }
        #expect(fixture.database.cache.statistics.entries == 0)
    }

    /// Readers keep filling the cache while a writer commits generation after generation; right
    /// after each commit, a read must see it. A row read before a commit and cached after it
    /// (no ticket check, or no invalidation after the commit) fails this.
    @Test func aReadAfterACommitNeverSeesAnOlderRow() async throws {
        let fixture = try TestVault()
        let database = fixture.database
        let id = try CredentialID("cache/race")
        try await fixture.vault.put(
            id, payload: try SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "p")
        let stop = StopFlag()
        let readers = (0..<2).map { _ in
            Task {
                while !stop.raised.load(ordering: .relaxed) {
                    _ = try await database.record(id)
                    await Task.yield()
                }
            }
        }
        var stale = 0
        for _ in 0..<2_000 {
            guard var row = try await database.record(id) else { Issue.record("the row is gone"); return }
            row.metadata.generation += 1
            let written = row.metadata.generation
            try await database.write(durability: .normal) { [row] in try await $0.save(row) }
            if try await database.record(id)?.metadata.generation != written { stale += 1 }
        }
        stop.raised.store(true, ordering: .relaxed)
        for reader in readers { try await reader.value }
        #expect(stale == 0)
        #expect(database.cache.statistics.hits > 0)
    }

    /// A checker reads the row from the database (`list`), then through the cache: once the
    /// database shows a generation, the cache must not serve an older one. Without the writer's
    /// `beginWrite`, the moment between a commit and its invalidation served the older row.
    @Test func theCacheIsNeverBehindTheDatabase() async throws {
        let fixture = try TestVault()
        let database = fixture.database
        let id = try CredentialID("cache/window")
        try await fixture.vault.put(
            id, payload: try SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "p")
        let stop = StopFlag()
        let writer = Task {
            while !stop.raised.load(ordering: .relaxed) {
                guard var row = try await database.record(id) else { return }
                row.metadata.generation += 1
                try await database.write(durability: .normal) { [row] in try await $0.save(row) }
            }
        }
        var behind = 0
        for _ in 0..<3_000 {
            let committed =
                try await database.list(CredentialQuery(namespace: "cache", limit: 1)).first?.generation ?? 0
            if (try await database.record(id)?.metadata.generation ?? 0) < committed { behind += 1 }
        }
        stop.raised.store(true, ordering: .relaxed)
        try await writer.value
        #expect(behind == 0)
    }

    /// A read that fails part-way leaves its statement on a row (a read transaction open); the
    /// reader is closed rather than pooled, so later reads (and the cache) see later commits.
    @Test func aReaderThatFailedPartWayIsNotReused() async throws {
        struct Failure: Error {}
        let fixture = try TestVault()
        let database = fixture.database
        let payload = try SamplePayloads.decode(SamplePayloads.tinkoff().json)
        let a = try CredentialID("cache/a")
        try await fixture.vault.put(a, payload: payload, provider: "p")
        try await fixture.vault.put(try CredentialID("cache/b"), payload: payload, provider: "p")
        #expect(throws: Failure.self) {
            try database.withReader { connection in
                _ = try connection.statement("SELECT id FROM credentials ORDER BY id").step()
                throw Failure()
            }
        }
        guard var row = try database.withReader({ try SQLiteDatabase.record(a, on: $0) }) else { return }
        row.metadata.generation += 1
        let written = row.metadata.generation
        try await database.write(durability: .normal) { [row] in try await $0.save(row) }
        #expect(try database.withReader { try SQLiteDatabase.record(a, on: $0) }?.metadata.generation == written)
        await #expect(try database.record(a)?.metadata.generation == written)
    }

    /// A sweep that reads every credential once (an export, a batch job) leaves the cache as it
    /// found it: the rows read again and again stay, the rows read once are not kept. Without the
    /// doorkeeper the sweep fills the cache to its bound.
    @Test func aSweepOfRowsReadOnceLeavesTheCacheAsItFoundIt() async throws {
        let fixture = try TestVault()
        let payload = try SamplePayloads.decode(SamplePayloads.tinkoff().json)
        let ids = try (0..<2_000).map { try CredentialID("sweep/c\($0)") }
        try await fixture.vault.importCredentials(
            ids.map { Vault.NewCredential(id: $0, payload: payload, provider: "p") })
        #expect(fixture.database.cache.statistics.entries == 0, "an import keeps nothing")
        for _ in 0..<2 { _ = try await fixture.database.record(ids[0]) }
        #expect(fixture.database.cache.statistics.entries == 1, "the row read twice is kept")
        for id in ids.dropFirst() { _ = try await fixture.database.record(id) }
        let statistics = fixture.database.cache.statistics
        #expect(statistics.entries < 1 + 2_000 / 20, "kept \(statistics.entries) rows of a sweep of 2,000")
        let hits = statistics.hits
        _ = try await fixture.database.record(ids[0])
        #expect(fixture.database.cache.statistics.hits == hits + 1, "the row read before the sweep is still there")
    }

    /// Misses count database reads, not lookups: the metric an operator sizes the cache by.
    @Test func aMissIsARowReadFromTheDatabase() async throws {
        let fixture = try TestVault()
        let id = try CredentialID("cache/count")
        try await fixture.vault.put(
            id, payload: try SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "p")
        let before = fixture.database.cache.statistics
        // The put kept nothing, and a row is kept from its second read on: two misses, then hits.
        _ = try await fixture.database.record(id)
        _ = try await fixture.database.record(id)
        _ = try await fixture.database.record(id)
        _ = try fixture.database.recordWithoutWaiting(id)
        let after = fixture.database.cache.statistics
        #expect(after.misses - before.misses == 2 && after.hits - before.hits == 2)
    }

    @Test func writesThatChangeAnyRowEmptyTheCache() async throws {
        let fixture = try TestVault()
        let id = try CredentialID("cache/raw")
        try await fixture.vault.put(
            id, payload: try SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "p")
        for _ in 0..<2 { _ = try await fixture.database.record(id) }  // kept from the second read
        #expect(fixture.database.cache.statistics.entries == 1)
        try fixture.database.withWriter { try $0.execute("UPDATE credentials SET subject = 'changed'") }
        await #expect(try fixture.database.record(id)?.metadata.subject == "changed")
    }

    @Test func aCacheOfNoBytesReadsTheDatabaseEachTime() async throws {
        let fixture = try TestVault()
        let database = try SQLiteDatabase(path: fixture.databasePath, checksum: SHA256.hex, cacheBytes: 0)
        defer { database.close() }
        let id = try CredentialID("cache/none")
        try await fixture.vault.put(
            id, payload: try SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "p")
        await #expect(try database.record(id) != nil)
        await #expect(try database.record(id) != nil)
        #expect(database.cache.statistics.entries == 0 && database.cache.statistics.hits == 0)
    }
}

private final class StopFlag: Sendable {
    let raised = Atomic<Bool>(false)
}
