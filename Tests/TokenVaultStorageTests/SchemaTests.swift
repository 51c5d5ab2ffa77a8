import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultTesting

@testable import TokenVaultStorage

@Suite struct SchemaTests {
    let fixture: TestVault
    init() throws { fixture = try TestVault() }

    func scalar(_ sql: String) throws -> String? { try fixture.database.withWriter { try $0.scalarText(sql) } }

    @Test func connectionSettings() throws {
        #expect(try scalar("PRAGMA journal_mode") == "wal")
        #expect(try scalar("PRAGMA foreign_keys") == "1")
        #expect(try scalar("PRAGMA synchronous") == "1")
    }

    @Test func fullDurabilityAppliesToItsCommitOnly() throws {
        let inside = try fixture.database.writeTransaction(durability: .full) {
            try $0.scalarText("PRAGMA synchronous")
        }
        #expect(inside == "2")
        #expect(try scalar("PRAGMA synchronous") == "1")
    }

    /// The one column table the queries read rows through names exactly the schema's columns, so a
    /// migration that adds, drops or renames one cannot leave a query reading the wrong column.
    @Test func columnTableMatchesTheSchema() throws {
        let schema = try fixture.database.withWriter { connection in
            let statement = try connection.statement("SELECT name FROM pragma_table_info('credentials')")
            var names: [String] = []
            while try statement.step() { names.append(statement.text(0) ?? "") }
            return names
        }
        #expect(Set(CredentialColumn.allCases.map(\.name)) == Set(schema))
        #expect(CredentialColumn.allCases.count == schema.count)
        // Every column read by name lands where the SELECT list put it.
        for column in CredentialColumn.allCases {
            let list = column.isSealed ? CredentialColumn.recordSelectList : CredentialColumn.metadataSelectList
            let items = list.components(separatedBy: ", ")
            #expect(items[Int(column.selectIndex)] == column.name, "\(column)")
        }
    }

    @Test func nextDueIsReadThroughTheIndex() throws {
        let plan = try fixture.database.withWriter { connection in
            let statement = try connection.statement(
                "EXPLAIN QUERY PLAN SELECT id FROM credentials WHERE refresh_at IS NOT NULL ORDER BY refresh_at LIMIT 1"
            )
            var lines: [String] = []
            while try statement.step() { lines.append(statement.text(3) ?? "") }
            return lines.joined(separator: "\n")
        }
        #expect(plan.contains("credentials_refresh_due"), "\(plan)")
    }

    /// A page of one credential's audit rows is read through its index in either order, not by
    /// walking the trail (up to `audit.max_rows`) and filtering.
    @Test(arguments: [AuditQuery.Order.oldestFirst, .newestFirst])
    func oneCredentialsAuditRowsAreReadThroughTheIndex(_ order: AuditQuery.Order) throws {
        let plan = try fixture.database.withWriter { connection in
            let statement = try connection.statement(
                "EXPLAIN QUERY PLAN " + SQLiteDatabase.auditSQL(order, oneCredential: true))
            var lines: [String] = []
            while try statement.step() { lines.append(statement.text(3) ?? "") }
            return lines.joined(separator: "\n")
        }
        #expect(plan.contains("audit_events_credential"), "\(plan)")
    }

    @Test(arguments: [
        "UPDATE credentials SET status = 'bogus'", "UPDATE credentials SET generation = 0",
        "UPDATE credentials SET seal_term = 99", "UPDATE credentials SET labels = '[1]'",
        "UPDATE credentials SET name = 'other'", "UPDATE credentials SET kind = 'verify_token'",
        "UPDATE credentials SET access_token = NULL", "INSERT INTO key_terms VALUES (7, x'00', 'active', 0)",
        "INSERT INTO audit_events (at, operation, outcome) VALUES (0, 'x', 'maybe')",
    ])
    func schemaRefusesInconsistentRows(_ sql: String) async throws {
        try await fixture.vault.put(
            try CredentialID("ns/a"), payload: try SamplePayloads.decode(SamplePayloads.oauth().json), provider: "p")
        #expect(throws: VaultError.self) { try fixture.database.withWriter { try $0.execute(sql) } }
    }

    @Test func termInUseCannotBeRemoved() async throws {
        try await fixture.vault.put(
            try CredentialID("ns/a"), payload: try SamplePayloads.decode(SamplePayloads.oauth().json), provider: "p")
        _ = try fixture.keyring.addTerm()
        #expect(try fixture.database.removeTerm(1) == false)
        #expect(try fixture.database.removeTerm(2) == false)
        #expect(try fixture.database.termUsage() == [1: 1, 2: 0])
    }
}
