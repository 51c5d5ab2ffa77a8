import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultStorage

/// The audit recorder's batches are written many rows per INSERT: every row must come back
/// whole and in order, whatever the batch size (below, at and across the statement's size).
@Suite struct AuditBatchTests {
    @Test(arguments: [
        1, 2, SQLiteCredentialWriter.auditRowsPerStatement - 1, SQLiteCredentialWriter.auditRowsPerStatement,
        SQLiteCredentialWriter.auditRowsPerStatement + 1, 2 * SQLiteCredentialWriter.auditRowsPerStatement + 5,
    ])
    func batchesKeepEveryRowAndItsOrder(count: Int) async throws {
        let fixture = try TestVault()
        let events = try (0..<count).map(Self.event)
        try await fixture.vault.appendAudits(events)
        let stored = try await fixture.database.auditEvents(after: nil, credentialID: nil, limit: 500)
        #expect(stored.map(\.event) == events)
        #expect(stored.map(\.id) == Array(1...Int64(count)))
        #expect(stored.allSatisfy { $0.mac?.count == 32 })
        await #expect(try fixture.vault.verifyAudit().isClean)
    }

    /// Row `index`, with every optional column both set and empty across the rows.
    static func event(_ index: Int) throws -> AuditEvent {
        let uid: UInt32? = index % 3 == 0 ? nil : UInt32(1000 + index)
        let gid: UInt32? = index % 5 == 0 ? nil : UInt32(index)
        let pid: Int32? = index % 7 == 0 ? nil : Int32(40_000 + index)
        let id: CredentialID? = index % 4 == 0 ? nil : try CredentialID("ns/c\(index)")
        let detail: String? = index % 3 == 1 ? "missing token:read" : nil
        return AuditEvent(
            at: Timestamp(milliseconds: 1_795_000_000_000 + Int64(index)), uid: uid, gid: gid, pid: pid,
            operation: index % 2 == 0 ? .tokenRead : .credentialPut, credentialID: id,
            outcome: index % 2 == 0 ? .allowed : .denied, detail: detail, count: index % 2 == 0 ? index + 1 : 1,
            lastAt: index % 2 == 0 ? Timestamp(milliseconds: 1_795_000_060_000 + Int64(index)) : nil)
    }
}
