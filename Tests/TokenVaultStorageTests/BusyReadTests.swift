import Foundation
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultStorage

/// The server's event-loop fast path reads with `recordWithoutWaiting`: when another
/// connection holds the database, it must fail at once (the request then goes to a blocking
/// thread) instead of sleeping in SQLite's busy handler on the loop.
@Suite struct BusyReadTests {
    @Test func withoutABusyTimeoutALockedDatabaseFailsAtOnce() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("busy.db")
        let setup = try SQLiteConnection(path: path)
        #expect(try setup.scalarText("PRAGMA journal_mode = WAL") == "wal")
        try setup.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)")
        setup.close()
        // An exclusive-mode connection that writes holds the file against every other reader.
        let blocker = try SQLiteConnection(path: path)
        try blocker.execute("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; INSERT INTO t VALUES (2)")
        defer { blocker.close() }

        let reader = try SQLiteConnection(path: path, create: false)
        reader.setBusyTimeout(milliseconds: 0)
        var started = ContinuousClock.now
        #expect(throws: VaultError.self) { try reader.scalarText("SELECT count(*) FROM t") }
        #expect(ContinuousClock.now - started < .seconds(3), "no waiting in the busy handler (5 s by default)")
        reader.setBusyTimeout(milliseconds: 400)
        started = ContinuousClock.now
        #expect(throws: VaultError.self) { try reader.scalarText("SELECT count(*) FROM t") }
        #expect(ContinuousClock.now - started >= .milliseconds(400), "with a timeout, the same read waits")
    }

    @Test func readingWithoutWaitingLeavesThePooledReaderAsItWas() async throws {
        let fixture = try TestVault()
        let id = try CredentialID("ns/a")
        _ = try await fixture.vault.put(
            id, payload: try SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "p")
        await #expect(try fixture.database.recordWithoutWaiting(id) == fixture.database.record(id))
        let timeout = try fixture.database.withReader { try $0.scalarText("PRAGMA busy_timeout") }
        #expect(timeout == String(SQLiteConnection.defaultBusyTimeoutMilliseconds))
    }

    /// The operator's counts leave the pooled reader with no read transaction open: a statement
    /// left on its row would pin the snapshot, and every later read on that connection (token
    /// reads included) would see the vault as it was then.
    @Test func countsDoNotPinTheReadersSnapshot() async throws {
        let fixture = try TestVault()
        let payload = try SamplePayloads.decode(SamplePayloads.tinkoff().json)
        _ = try await fixture.vault.put(try CredentialID("ns/a"), payload: payload, provider: "p")
        await #expect(try fixture.database.auditRowCount() == 0, "a put without an audit event writes no row")
        _ = try await fixture.vault.put(try CredentialID("ns/b"), payload: payload, provider: "p")
        await #expect(try fixture.database.credentialCountsByStatus()[.active] == 2)
        await #expect(try fixture.database.record(CredentialID("ns/b")) != nil)
    }
}
