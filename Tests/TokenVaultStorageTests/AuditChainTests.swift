import Foundation
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultTesting

@testable import TokenVaultStorage

/// The audit trail's chain on a real SQLite file: whatever is written through the ledger
/// verifies, and a row edited, removed from the middle or the end, or a chain end moved in the
/// database (by anyone without the vault's key) is reported, naming the row.
@Suite struct AuditChainTests {
    let fixture: TestVault

    init() throws { fixture = try TestVault() }

    /// Twenty rows: puts and deletes (their rows ride in the credential's transaction) and a
    /// recorder batch.
    func writeTwentyRows() async throws {
        for index in 0..<5 {
            let id = try CredentialID("pay/c\(index)")
            try await fixture.vault.put(
                id, payload: SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "tinkoff-id",
                audit: AuditEvent(
                    at: fixture.clock.now, uid: 1000, operation: .credentialPut, credentialID: id,
                    outcome: .succeeded))
        }
        try await fixture.vault.delete(
            try CredentialID("pay/c0"),
            audit: AuditEvent(at: fixture.clock.now, operation: .credentialDelete, outcome: .succeeded))
        try await fixture.vault.appendAudits(try (0..<14).map(AuditBatchTests.event))
    }

    func execute(_ sql: String) throws {
        try fixture.database.withWriter { try $0.execute(sql) }
    }

    func failures() async throws -> [String] { try await fixture.vault.verifyAudit(batchSize: 7).failures }

    @Test func everythingWrittenThroughTheLedgerVerifies() async throws {
        try await writeTwentyRows()
        let report = try await fixture.vault.verifyAudit(batchSize: 7)
        #expect(report.isClean, "\(report.failures)")
        #expect(report.rows == 20 && report.unchainedRows == 0)
    }

    @Test func anEditedRowIsNamed() async throws {
        try await writeTwentyRows()
        try execute("UPDATE audit_events SET detail = 'nothing happened' WHERE id = 9")
        await #expect(try failures() == ["audit row 9 was edited (or the row before it was replaced)"])
    }

    @Test func anEditedCountOrActorIsNamed() async throws {
        try await writeTwentyRows()
        try execute("UPDATE audit_events SET count = count + 1 WHERE id = 12")
        try execute("UPDATE audit_events SET actor_uid = 0 WHERE id = 3")
        await #expect(
            try failures().sorted() == [
                "audit row 12 was edited (or the row before it was replaced)",
                "audit row 3 was edited (or the row before it was replaced)",
            ])
    }

    @Test func rowsRemovedFromTheMiddleAreNamed() async throws {
        try await writeTwentyRows()
        try execute("DELETE FROM audit_events WHERE id IN (7, 8)")
        await #expect(try failures() == ["audit rows 7-8 were removed"])
    }

    @Test func rowsRemovedFromTheEndAreNamed() async throws {
        try await writeTwentyRows()
        try execute("DELETE FROM audit_events WHERE id > 17")
        await #expect(try failures() == ["audit rows 18-20 were removed from the end"])
        // And the chain is not quietly continued over the gap: the next row still shows it.
        try await fixture.vault.appendAudits([try AuditBatchTests.event(1)])
        await #expect(try failures().contains("audit rows 18-20 were removed"))
    }

    @Test func aRowRemovedFromTheStartIsNamed() async throws {
        try await writeTwentyRows()
        try execute("DELETE FROM audit_events WHERE id = 1")
        await #expect(try failures() == ["audit row 1 was removed"])
    }

    @Test func aMovedChainEndIsNamed() async throws {
        try await writeTwentyRows()
        try execute("DELETE FROM audit_events WHERE id > 17")
        // Pointing the head at the new last row does not help without the key.
        try execute(
            """
            UPDATE audit_chain SET row_id = 17, position = 17, mac = (SELECT mac FROM audit_events WHERE id = 17)
            WHERE name = 'head'
            """)
        await #expect(try failures() == ["audit chain head (row 17) was altered"])
    }

    @Test func pruningKeepsTheChainCheckable() async throws {
        try await writeTwentyRows()
        #expect(
            try await fixture.vault.pruneAudit(before: Timestamp(milliseconds: 0), keepingAtMost: 12, batch: 3) == 8)
        let left = try await fixture.database.auditEvents(after: nil, credentialID: nil, limit: 100)
        #expect(left.map(\.id) == Array(9...20))
        var report = try await fixture.vault.verifyAudit(batchSize: 5)
        #expect(report.isClean && report.rows == 12, "\(report.failures)")

        // By age: every row older than a cutoff, whatever the count.
        fixture.clock.advance(seconds: 3600)
        try await fixture.vault.appendAudits([
            AuditEvent(at: fixture.clock.now, operation: .adminBackup, outcome: .succeeded)
        ])
        #expect(try await fixture.vault.pruneAudit(before: fixture.clock.now, keepingAtMost: 1000) == 12)
        report = try await fixture.vault.verifyAudit()
        #expect(report.isClean && report.rows == 1, "\(report.failures)")

        // Removing the row after the anchor is still seen.
        try execute("DELETE FROM audit_events")
        await #expect(try failures() == ["audit row 21 was removed from the end"])
    }

    @Test func aReadAggregateIsPrunedByItsLastRead() async throws {
        let start = fixture.clock.now
        try await fixture.vault.appendAudits([
            AuditEvent(
                at: start, operation: .tokenRead, outcome: .allowed, count: 900, lastAt: start.adding(seconds: 60))
        ])
        #expect(try await fixture.vault.pruneAudit(before: start.adding(seconds: 30), keepingAtMost: 1000) == 0)
        #expect(try await fixture.vault.pruneAudit(before: start.adding(seconds: 61), keepingAtMost: 1000) == 1)
    }

    /// A vault from before the chain: its rows have no MAC, are counted as such, and the chain
    /// starts after them.
    @Test func rowsFromBeforeTheChainAreCountedAndTheChainStartsAfterThem() async throws {
        try execute(
            """
            INSERT INTO audit_events (at, operation, outcome, position) VALUES (1, 'credential.put', 'succeeded', 1),
                (2, 'token.read', 'allowed', 2)
            """)
        try await writeTwentyRows()
        let report = try await fixture.vault.verifyAudit(batchSize: 4)
        #expect(report.isClean && report.rows == 22 && report.unchainedRows == 2, "\(report.failures)")
        try execute("UPDATE audit_events SET outcome = 'failed' WHERE id = 4")
        await #expect(try failures() == ["audit row 4 was edited (or the row before it was replaced)"])
        // A chained row cannot pass for an older one by losing its MAC.
        try execute("UPDATE audit_events SET mac = NULL WHERE id = 10")
        await #expect(try failures().contains("audit row 10 has lost its MAC"))
    }

    /// A vault several nodes share: each appends to a chain of its own (so none waits for
    /// another's audited writes), the chains interleave by id, and each verifies on its own,
    /// next to the vault's first chain.
    func node(_ chain: String) -> Vault {
        Vault(
            store: fixture.database, sealer: fixture.keyring, clock: fixture.clock,
            options: .init(auditChain: chain))
    }

    /// Rows 1-3 node-a, 4-5 node-b, 6 the first chain, 7-8 node-a, 9-10 node-b.
    func writeThreeChains() async throws {
        let (a, b) = (node("node-a"), node("node-b"))
        try await a.appendAudits(try (0..<3).map(AuditBatchTests.event))
        try await b.appendAudits(try (0..<2).map(AuditBatchTests.event))
        try await fixture.vault.appendAudits([try AuditBatchTests.event(9)])
        try await a.appendAudits(try (3..<5).map(AuditBatchTests.event))
        try await b.appendAudits(try (2..<4).map(AuditBatchTests.event))
    }

    @Test func chainsOfSeveralNodesInterleaveAndVerify() async throws {
        try await writeThreeChains()
        let rows = try await fixture.database.auditEvents(after: nil, credentialID: nil, limit: 100)
        #expect(
            rows.map(\.chain) == [
                "node-a", "node-a", "node-a", "node-b", "node-b", "", "node-a", "node-a", "node-b", "node-b",
            ])
        #expect(rows.filter { $0.chain == "node-a" }.map(\.position) == [1, 2, 3, 4, 5])
        let report = try await node("node-c").verifyAudit(batchSize: 3)
        #expect(report.isClean && report.rows == 10, "\(report.failures)")
        await #expect(Set(try fixture.database.auditChainEnds().map(\.chain)) == ["", "node-a", "node-b"])
    }

    @Test func aRowRemovedFromOneNodesChainIsCountedThere() async throws {
        try await writeThreeChains()
        try execute("DELETE FROM audit_events WHERE id = 2")
        try execute("DELETE FROM audit_events WHERE id = 10")
        await #expect(
            try failures() == [
                "1 audit row of chain node-a was removed before row 3",
                "1 audit row of chain node-b was removed from the end",
            ])
    }

    @Test func aChainEndMovedToAnotherNodesChainIsNamed() async throws {
        try await writeThreeChains()
        // node-b's head given node-a's (a valid seal, but for another chain).
        try execute(
            """
            UPDATE audit_chain SET (row_id, position, mac, seal) =
                (SELECT row_id, position, mac, seal FROM audit_chain WHERE chain = 'node-a' AND name = 'head')
            WHERE chain = 'node-b' AND name = 'head'
            """)
        await #expect(try failures().contains("audit chain node-b head (row 8) was altered"))
    }

    @Test func pruningAnchorsEveryChainItCutsAndNeverMovesAnAnchorBack() async throws {
        try await writeThreeChains()
        #expect(try await fixture.vault.pruneAudit(before: Timestamp(milliseconds: 0), keepingAtMost: 3, batch: 4) == 7)
        let anchors = try await fixture.database.auditChainEnds().filter { $0.name == .anchor }
        #expect(
            Dictionary(uniqueKeysWithValues: anchors.map { ($0.chain, $0.rowID) }) == ["node-a": 7, "node-b": 5, "": 6])
        let report = try await fixture.vault.verifyAudit(batchSize: 2)
        #expect(report.isClean && report.rows == 3, "\(report.failures)")
        // A slower pruner that read an older row does not move node-a's anchor back to it.
        let older = try #require(anchors.first { $0.chain == "node-a" })
        var stale = older
        (stale.rowID, stale.position) = (1, 1)
        try await fixture.database.write(durability: .normal) { [stale] in try await $0.setAuditChainEnd(stale) }
        await #expect(try fixture.database.auditChainEnds().contains(older))
        // New rows continue each chain after its anchor.
        try await node("node-b").appendAudits([try AuditBatchTests.event(5)])
        await #expect(try fixture.vault.verifyAudit().isClean)
    }

    /// Rekey re-wraps the audit key: the chain written under the old master key still verifies.
    @Test func theChainSurvivesARekey() async throws {
        try await writeTwentyRows()
        let newKey = SodiumRandom.secret(count: 32)
        try fixture.keyring.rekey(to: newKey, settings: [:])
        let (database, keyring) = try fixture.reopen(masterKey: newKey)
        let reopened = Vault(store: database, sealer: keyring, clock: fixture.clock)
        await #expect(try reopened.verifyAudit().isClean)
    }

    /// Another key (a vault whose audit key was replaced) sees every row as edited.
    @Test func anotherAuditKeyDoesNotVerify() async throws {
        try await writeTwentyRows()
        let forged = Vault(store: fixture.database, sealer: ForgedAuditKey(fixture.keyring), clock: fixture.clock)
        await #expect(try forged.verifyAudit().failures.count > 2)
    }
}

/// The vault's keyring with another audit key.
private struct ForgedAuditKey: Sealer {
    let base: Keyring
    let key = SodiumRandom.secret(count: 32)
    init(_ base: Keyring) { self.base = base }

    var activeTerm: UInt32 { base.activeTerm }
    func seal(_ plaintext: SecretBytes, associatedData: [UInt8], term: UInt32) throws -> [UInt8] {
        try base.seal(plaintext, associatedData: associatedData, term: term)
    }
    func open(_ envelope: [UInt8], associatedData: [UInt8]) throws -> SecretBytes {
        try base.open(envelope, associatedData: associatedData)
    }
    func term(of envelope: [UInt8]) throws -> UInt32 { try base.term(of: envelope) }
    func fingerprint(_ secret: SecretBytes) -> String { base.fingerprint(secret) }
    func randomSecret(count: Int) -> SecretBytes { base.randomSecret(count: count) }
    func sha256(_ secret: SecretBytes) -> [UInt8] { base.sha256(secret) }
    func auditMAC(_ bytes: [UInt8]) -> [UInt8]? { KeyedHash.mac(key: key, bytes) }
    func reload() throws { try base.reload() }
    func hasKey(for term: UInt32) -> Bool { base.hasKey(for: term) }
}
