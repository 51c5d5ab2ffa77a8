import Foundation
import Logging
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultServer
import TokenVaultStorage
import TokenVaultTesting

/// The audit recorder on a real SQLite vault: token reads stay a handful of rows however many
/// there are, a batch the database refuses is kept and written later (dropped only beyond a
/// cap, and counted), and old rows are pruned with the chain left whole.
@Suite struct AuditRecorderTests {
    static let logger = Logger(label: "audit-recorder-tests")

    static func read(_ fixture: TestVault, pid: Int32, outcome: AuditEvent.Outcome = .allowed) throws -> AuditEvent {
        AuditEvent(
            at: fixture.clock.now, uid: 1000, gid: 1000, pid: pid, operation: .tokenRead,
            credentialID: try CredentialID("pay/alice"), outcome: outcome)
    }

    static func rows(_ fixture: TestVault) async throws -> [StoredAuditEvent] {
        try await fixture.vault.auditEvents(AuditQuery(.oldestFirst, limit: 1_000))
    }

    @Test func aHundredThousandReadsAreAFewRows() async throws {
        let fixture = try TestVault()
        let recorder = AuditRecorder(vault: fixture.vault, logger: Self.logger)
        for index in 0..<100_000 {
            recorder.record(try Self.read(fixture, pid: Int32(100 + index % 3)))
        }
        for _ in 0..<5 { recorder.record(try Self.read(fixture, pid: 100, outcome: .denied)) }
        recorder.record(AuditEvent(at: fixture.clock.now, operation: .credentialPut, outcome: .succeeded))
        await recorder.flush()

        let rows = try await Self.rows(fixture)
        let reads = rows.filter { $0.event.operation == "token.read" && $0.event.outcome == .allowed }
        #expect(reads.count == 3, "one row per caller")
        #expect(reads.map(\.event.count).reduce(0, +) == 100_000)
        #expect(reads.allSatisfy { $0.event.lastAt != nil })
        #expect(rows.filter { $0.event.outcome == .denied }.count == 5, "denials keep a row each")
        #expect(rows.count == 3 + 5 + 1)
        #expect(recorder.counters.written == 9 && recorder.counters.pending == 0)
        await #expect(try fixture.vault.verifyAudit().isClean)
    }

    @Test func readsWaitForTheirIntervalOtherEventsDoNot() async throws {
        let fixture = try TestVault()
        var options = AuditRecorder.Options()
        options.flushInterval = .milliseconds(20)
        options.readInterval = .seconds(3600)
        let recorder = AuditRecorder(vault: fixture.vault, options: options, logger: Self.logger)
        let running = Task { try await recorder.run() }
        defer { running.cancel() }
        recorder.record(try Self.read(fixture, pid: 1))
        recorder.record(AuditEvent(at: fixture.clock.now, operation: .credentialPut, outcome: .succeeded))
        // Generous: the suite shares two cores with the parallel phase's heaviest tests.
        #expect(try await waitUntil(within: 30) { try await Self.rows(fixture).count == 1 })
        await #expect(try Self.rows(fixture).map(\.event.operation) == ["credential.put"])
        #expect(recorder.counters.pending == 1, "the read is being counted until its interval ends")
        await recorder.flush()
        await #expect(try Self.rows(fixture).map(\.event.operation) == ["credential.put", "token.read"])
    }

    /// A caller reading many credentials: beyond `maximumReadCounts` the counts are written at
    /// the next flush, not kept in memory until their interval ends.
    @Test func readCountsBeyondTheCapAreWrittenEarly() async throws {
        let fixture = try TestVault()
        var options = AuditRecorder.Options()
        options.flushInterval = .milliseconds(20)
        options.readInterval = .seconds(3600)
        options.maximumReadCounts = 100
        let recorder = AuditRecorder(vault: fixture.vault, options: options, logger: Self.logger)
        let running = Task { try await recorder.run() }
        defer { running.cancel() }
        for index in 0..<1000 {
            recorder.record(
                AuditEvent(
                    at: fixture.clock.now, uid: 1000, pid: 7, operation: .tokenRead,
                    credentialID: try CredentialID("pay/c\(index)"), outcome: .allowed))
            if index % 100 == 99 { try await Task.sleep(for: .milliseconds(30)) }
        }
        #expect(
            try await waitUntil { try await Self.rows(fixture).count == 1000 }, "the counts waited for their interval")
        #expect(recorder.counters.pending == 0)
    }

    /// A flush of more rows than `rowsPerWrite` is several writes, one chain: every row
    /// arrives, in the order recorded, and the chain verifies.
    @Test func aLargeFlushIsWrittenInSeveralWritesOfOneChain() async throws {
        let fixture = try TestVault()
        var options = AuditRecorder.Options()
        options.rowsPerWrite = 10
        let recorder = AuditRecorder(vault: fixture.vault, options: options, logger: Self.logger)
        for index in 0..<25 {
            recorder.record(
                AuditEvent(at: fixture.clock.now, operation: .credentialPut, outcome: .succeeded, detail: "\(index)"))
        }
        await recorder.flush()
        await #expect(try Self.rows(fixture).map(\.event.detail) == (0..<25).map { "\($0)" })
        #expect(recorder.counters.written == 25)
        let verification = try await fixture.vault.verifyAudit()
        #expect(verification.isClean && verification.rows == 25, "\(verification)")
    }

    /// Another connection holds the write lock past the busy timeout: the batch is kept and
    /// written once the lock is gone; beyond `maximumPending` the oldest rows go, counted.
    @Test func aRefusedBatchIsKeptThenWrittenAndOnlyTheExcessIsDropped() async throws {
        let fixture = try TestVault(busyTimeoutMilliseconds: 50)
        var options = AuditRecorder.Options()
        options.maximumPending = 10
        let recorder = AuditRecorder(vault: fixture.vault, options: options, logger: Self.logger)
        let other = try SQLiteDatabase(path: fixture.databasePath, checksum: SHA256.hex, busyTimeoutMilliseconds: 5000)
        defer { other.close() }

        // On a thread of the store's own, from before the batch is recorded until its first flush
        // has returned (a fixed hold ran out before the flush on a loaded machine).
        let holding = Atomic<Bool>(false)
        let release = Atomic<Bool>(false)
        let locked = Task.detached {
            try await other.write(durability: .normal) { _ in
                holding.store(true, ordering: .releasing)
                let deadline = Date().addingTimeInterval(30)
                while !release.load(ordering: .acquiring), Date() < deadline { usleep(5000) }
            }
        }
        // The other connection's transaction starts on a thread of its own; a loaded machine
        // (the suite runs in parallel) has taken more than 5 s to start it.
        #expect(try await waitUntil(within: 30) { holding.load(ordering: .acquiring) })
        for index in 0..<25 {
            recorder.record(
                AuditEvent(at: fixture.clock.now, operation: .credentialPut, outcome: .succeeded, detail: "\(index)"))
        }
        await recorder.flush()
        #expect(recorder.counters.writeFailures >= 1)
        #expect(recorder.counters.dropped == 15 && recorder.counters.pending == 10)
        release.store(true, ordering: .releasing)
        try await locked.value

        await recorder.flush()
        let rows = try await Self.rows(fixture)
        #expect(rows.map { $0.event.detail ?? "" } == (15..<25).map(String.init), "the newest ten, in order")
        #expect(recorder.counters.pending == 0 && recorder.counters.written == 10)
    }

    @Test func oldRowsArePrunedAndTheChainStaysWhole() async throws {
        let fixture = try TestVault()
        var options = AuditRecorder.Options()
        options.flushInterval = .milliseconds(10)
        options.pruneInterval = .milliseconds(10)
        options.maximumRows = 5
        let recorder = AuditRecorder(vault: fixture.vault, options: options, logger: Self.logger)
        for index in 0..<20 {
            recorder.record(
                AuditEvent(at: fixture.clock.now, operation: .credentialPut, outcome: .succeeded, detail: "\(index)"))
        }
        let running = Task { try await recorder.run() }
        defer { running.cancel() }
        // Generous: the parallel phase can keep the concurrency pool busy for seconds (seen twice at 5).
        #expect(try await waitUntil(within: 30) { recorder.counters.pruned >= 15 })
        await #expect(try Self.rows(fixture).map { $0.event.detail ?? "" } == (15..<20).map(String.init))
        await #expect(try fixture.vault.verifyAudit().isClean)
    }
}
