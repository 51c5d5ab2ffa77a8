import Foundation
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultStorage

/// The point read of a credential runs as a named statement, prepared once per connection
/// (`PostgresLink.execute`): PostgreSQL parses and plans it once, not at every refresh.
@Suite struct PostgresPreparedStatementTests {
    /// Reads go to the reader link as a prepared statement, whose plans PostgreSQL counts; the
    /// same read inside a transaction runs as text and gives the same row.
    @Test func aPointReadIsPreparedOncePerConnection() async throws {
        let fixture = try await TestBackendVault.make(.postgres)
        let database = try #require(fixture.backend as? PostgresDatabase)
        let id = try CredentialID("pay/prepared")
        try await fixture.vault.put(id, payload: PostgresChangeTests.payload("one"), provider: "idp")
        let reader = database.readers.links[0]
        let (executions, inTransaction) = try await offThePool {
            for _ in 0..<3 { #expect(try reader.credentialRecord(id)?.metadata.id == id) }
            let statements = try reader.query(
                "SELECT name, generic_plans + custom_plans FROM pg_prepared_statements"
            ).rows.map { try $0.decode((String, Int64).self) }
            let inTransaction = try database.write(durability: .full) { writer in
                try (writer as! PostgresCredentialWriter).link.credentialRecord(id)
            }
            return (statements, inTransaction)
        }
        #expect(executions.count == 1)
        #expect(executions.first?.0 == RecordByID.name)
        #expect(executions.first?.1 == 3)
        #expect(inTransaction?.metadata.id == id)
        #expect(inTransaction?.accessToken == (try reader.credentialRecord(id)?.accessToken))
    }

    /// Another node's migration changes a column the prepared statement returns: PostgreSQL
    /// refuses the old plan ("cached plan must not change result type"), and the read is
    /// prepared again on a new connection instead of failing.
    @Test func aReadPreparedBeforeTheTableChangedIsPreparedAgain() async throws {
        let fixture = try await TestBackendVault.make(.postgres)
        let database = try #require(fixture.backend as? PostgresDatabase)
        let server = try #require(fixture.server)
        let name = try #require(fixture.postgresDatabase)
        let id = try CredentialID("pay/migrated")
        try await fixture.vault.put(id, payload: PostgresChangeTests.payload("one"), provider: "idp")
        let reader = database.readers.links[0]
        try await offThePool { _ = try reader.credentialRecord(id) }
        _ = try server.psql("ALTER TABLE credentials ALTER COLUMN token_type TYPE varchar(64)", database: name)
        let record = try await offThePool { try reader.credentialRecord(id) }
        #expect(record?.metadata.tokenType == "Bearer")
    }
}
