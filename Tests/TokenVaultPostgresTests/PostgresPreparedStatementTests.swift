import Foundation
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultStorage

/// The point read of a credential runs as a named statement, prepared once per connection
/// (`PostgresLink.execute`): PostgreSQL parses and plans it once, not at every refresh.
@Suite struct PostgresPreparedStatementTests {
    /// Reads go to the reader link as a prepared statement, whose plans PostgreSQL counts; the
    /// same read inside a transaction is prepared on the writer and gives the same row.
    @Test func aPointReadIsPreparedOncePerConnection() async throws {
        let fixture = try await TestBackendVault.make(.postgres)
        let database = try #require(fixture.backend as? PostgresDatabase)
        let id = try CredentialID("pay/prepared")
        try await fixture.vault.put(id, payload: PostgresChangeTests.payload("one"), provider: "idp")
        let executions = try await database.readers.withConnection { reader in
            for _ in 0..<3 { #expect(try await reader.credentialRecord(id)?.metadata.id == id) }
            return try await reader.query(
                "SELECT name, generic_plans + custom_plans FROM pg_prepared_statements"
            ).rows.map { try $0.decode((String, Int64).self) }
        }
        let inTransaction = try await database.write(durability: .full) { writer in
            let link = (writer as! PostgresCredentialWriter).link
            let record = try await link.credentialRecord(id)
            let prepared = try await link.query("SELECT name FROM pg_prepared_statements").rows.map {
                try $0.decode(String.self)
            }
            #expect(prepared.contains(RecordByID.name))
            return record
        }
        #expect(executions.count == 1)
        #expect(executions.first?.0 == RecordByID.name)
        #expect(executions.first?.1 == 3)
        #expect(inTransaction?.metadata.id == id)
        let read = try await database.readers.withConnection { try await $0.credentialRecord(id) }
        #expect(inTransaction?.accessToken == read?.accessToken)
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
        _ = try await database.readers.withConnection { try await $0.credentialRecord(id) }
        _ = try server.psql("ALTER TABLE credentials ALTER COLUMN token_type TYPE varchar(64)", database: name)
        let record = try await database.readers.withConnection { try await $0.credentialRecord(id) }
        #expect(record?.metadata.tokenType == "Bearer")
    }

    /// A group's reads (`prefetch`) are prepared on the writer too. Prepared before the table
    /// changed, they fail the transaction as retryable (a storage error the ledger and the
    /// engine retry) and close the connection, so the next transaction prepares them anew.
    @Test func aGroupPreparedBeforeTheTableChangedFailsAsRetryableOnce() async throws {
        let fixture = try await PostgresGroupCommitTests.fixture()
        let server = try #require(fixture.vault.server)
        let name = try #require(fixture.vault.postgresDatabase)
        let a = try await PostgresGroupCommitTests.put(fixture, "a")
        let read = { @Sendable (writer: PostgresCredentialWriter) async throws in
            try await writer.prefetch([a.id])
            return try await writer.record(a.id)?.metadata.tokenType
        }
        #expect(try await PostgresGroupCommitTests.write(fixture.database, read) == "Bearer")
        let prepared = try await PostgresGroupCommitTests.write(fixture.database) { writer in
            try await writer.link.query("SELECT name FROM pg_prepared_statements").rows.map {
                try $0.decode(String.self)
            }
        }
        #expect(Set(prepared).isSuperset(of: [LockClaims.name, RecordsByID.name, OpenAttemptsOf.name]))
        _ = try server.psql("ALTER TABLE credentials ALTER COLUMN token_type TYPE varchar(64)", database: name)
        let error = await #expect(throws: VaultError.self) {
            try await PostgresGroupCommitTests.write(fixture.database, read)
        }
        #expect(error?.code == .storageUnavailable)
        #expect(try await PostgresGroupCommitTests.write(fixture.database, read) == "Bearer")
    }

    /// After five runs PostgreSQL may keep a plan made without the values (a generic plan), when
    /// it looks no costlier than those made with them: each prepared statement must still reach
    /// its rows through its index then. (A group's closes, tried as `DELETE … USING unnest(…)`,
    /// got a generic plan through the lease owner's index, which on a single node scans every
    /// open attempt for each close, and ran slower than as text; they stay text.)
    @Test func everyPreparedStatementKeepsItsIndexWithoutItsValues() async throws {
        let fixture = try await TestBackendVault.make(.postgres)
        let server = try #require(fixture.server)
        let name = try #require(fixture.postgresDatabase)
        // Tables of a size where a scan costs more than the index (on a few hundred rows a scan
        // is the better plan, and PostgreSQL rightly takes it): 20,000 copies of one credential,
        // each with an open attempt.
        try await fixture.vault.put(
            try CredentialID("pay/c1"), payload: PostgresChangeTests.payload("1"), provider: "idp")
        _ = try server.psql(
            """
            INSERT INTO credentials
            SELECT (json_populate_record(c, json_build_object('id', 'pay/g' || g, 'name', 'g' || g))).*
            FROM credentials c, generate_series(1, 20000) g WHERE c.id = 'pay/c1';
            INSERT INTO refresh_attempts (attempt_id, credential_id, generation, refresh_token_fingerprint,
                                          lease_owner, lease_expires_at, state, started_at)
            SELECT 'a' || g, 'pay/g' || g, 1, 'fp', 'node', 0, 'open', 0 FROM generate_series(1, 20000) g;
            ANALYZE
            """, database: name)
        let statements: [(sql: String, arguments: String, index: String?)] = [
            (RecordByID.sql, "'pay/c1'", "credentials_pkey"),
            (RecordsByID.sql, "ARRAY['pay/c1', 'pay/g2']", "credentials_pkey"),
            (OpenAttemptsOf.sql, "ARRAY['pay/c1', 'pay/g2']", "refresh_attempts_one_open"),
            (LockClaims.sql, "ARRAY['pay/c1', 'pay/g2']", nil),
        ]
        for statement in statements {
            let plan = try server.psql(
                "SET plan_cache_mode = force_generic_plan; PREPARE s AS \(statement.sql); "
                    + "EXPLAIN EXECUTE s(\(statement.arguments))", database: name)
            #expect(!plan.contains("Seq Scan on credentials"), "\(plan)")
            #expect(!plan.contains("Seq Scan on refresh_attempts"), "\(plan)")
            if let index = statement.index { #expect(plan.contains(index), "\(plan)") }
        }
    }

    /// A statement first prepared inside a transaction that had already failed is refused at its
    /// preparation (25P02), and postgres-nio answers every later use of that name on the
    /// connection with the same refusal: the connection is replaced, so the next transaction
    /// works. (The writer pool hands back the link it gave last, as in the test above.)
    @Test func aPreparationRefusedInAFailedTransactionDoesNotOutliveIt() async throws {
        let fixture = try await PostgresGroupCommitTests.fixture()
        let a = try await PostgresGroupCommitTests.put(fixture, "a")
        await #expect(throws: (any Error).self) {
            try await PostgresGroupCommitTests.write(fixture.database) { writer in
                _ = try? await writer.link.query("SELECT 1/0")
                try await writer.prefetch([a.id])
            }
        }
        let read = { @Sendable (writer: PostgresCredentialWriter) async throws in
            try await writer.prefetch([a.id])
            return try await writer.record(a.id)?.metadata.tokenType
        }
        #expect(try await PostgresGroupCommitTests.write(fixture.database, read) == "Bearer")
    }
}
