import PostgresNIO
import TokenVaultCore

/// The schema from `migrations/postgres/`, applied with the SQLite files' discipline: in order,
/// each in its own transaction, each file's SHA-256 recorded and checked on every start. Nodes
/// that start together take turns (a session advisory lock), so a migration runs once.
extension PostgresDatabase {
    static let migrationLockKey: Int64 = 0x746F_6B65_6E6D_6967

    public func pendingMigrations() throws -> [Migration] {
        try administering { [self] link in
            try migrator.pending(applied: try await Self.appliedMigrationRecords(on: link), database: location)
        }
    }

    /// Applies pending migrations; returns what was applied.
    @discardableResult
    public func migrate() throws -> [Migration] {
        try administering { [self] link in
            try await link.query("SELECT pg_advisory_lock(\(Self.migrationLockKey))")
            let applied: [Migration]
            do {
                applied = try await applyPending(on: link)
            } catch {
                _ = try? await link.query("SELECT pg_advisory_unlock(\(Self.migrationLockKey))")
                throw error
            }
            _ = try? await link.query("SELECT pg_advisory_unlock(\(Self.migrationLockKey))")
            return applied
        }
    }

    private func applyPending(on link: PostgresLink) async throws -> [Migration] {
        let pending = try migrator.pending(
            applied: try await Self.appliedMigrationRecords(on: link), database: location)
        guard !pending.isEmpty else { return [] }
        try await link.query(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    BIGINT PRIMARY KEY NOT NULL,
                name       TEXT NOT NULL,
                sha256     TEXT NOT NULL CHECK (length(sha256) = 64),
                applied_at BIGINT NOT NULL
            )
            """)
        for migration in pending {
            do {
                try await link.transaction {
                    for statement in SQLScript.statements(String(decoding: migration.sql, as: UTF8.self)) {
                        try await link.query(PostgresQuery(unsafeSQL: statement))
                    }
                    try await link.query(
                        """
                        INSERT INTO schema_migrations (version, name, sha256, applied_at)
                        VALUES (\(Int64(migration.version)), \(migration.fileName), \(migrator.checksum(migration.sql)),
                                \(clock.now.milliseconds))
                        """)
                }
            } catch {
                throw VaultError.migration(
                    "migration postgres/\(migration.fileName) failed and was rolled back: \(error)")
            }
        }
        return pending
    }

    /// The migrations recorded, read on `link` (the administration link, which applies them; a
    /// reader for health).
    static func appliedMigrationRecords(on link: PostgresLink) async throws -> [Int: (name: String, sha256: String)] {
        guard try await tableExists("schema_migrations", on: link) else { return [:] }
        var applied: [Int: (name: String, sha256: String)] = [:]
        for row in try await link.query("SELECT version, name, sha256 FROM schema_migrations").rows {
            let (version, name, sha256) = try row.decode((Int64, String, String).self)
            applied[Int(version)] = (name, sha256)
        }
        return applied
    }

    static func tableExists(_ name: String, on link: PostgresLink) async throws -> Bool {
        try await link.query("SELECT to_regclass(\(name)) IS NOT NULL").rows.first.map { try $0.decode(Bool.self) }
            ?? false
    }
}

extension PostgresDatabase: KeyTermStore {
    public func terms() throws -> [WrappedTerm] {
        try administering { link in
            guard try await Self.tableExists("key_terms", on: link) else { return [] }
            return try await Self.terms(on: link)
        }
    }

    static func terms(on link: PostgresLink) async throws -> [WrappedTerm] {
        try await link.query("SELECT term, wrapped_key, state, created_at FROM key_terms ORDER BY term").rows.map {
            row in
            let (term, key, state, created) = try row.decode((Int64, ByteBuffer, String, Int64).self)
            return WrappedTerm(
                term: UInt32(truncatingIfNeeded: term), wrappedKey: Array(key.readableBytesView),
                isActive: state == "active",
                createdAt: Timestamp(milliseconds: created))
        }
    }

    public func addActiveTerm(_ term: WrappedTerm, keyCheck: String) throws {
        try administering { link in
            try await link.transaction {
                try await Self.checkKey(keyCheck, on: link)
                try await link.query("UPDATE key_terms SET state = 'retired' WHERE state = 'active'")
                try await link.query(
                    """
                    INSERT INTO key_terms (term, wrapped_key, state, created_at)
                    VALUES (\(Int64(term.term)), \(ByteBuffer(bytes: term.wrappedKey)), 'active', \(term.createdAt.milliseconds))
                    """)
            }
        }
    }

    public func removeTerm(_ term: UInt32) throws -> Bool {
        try administering { link in
            try await link.transaction {
                // An expired sign-in keeps no term: it can never be finished.
                try await link.query(
                    """
                    DELETE FROM authorizations
                    WHERE seal_term = \(Int64(term)) AND expires_at <= \(self.clock.now.milliseconds)
                    """)
                let inUse = try await link.query(
                    """
                    SELECT 1 FROM credentials WHERE seal_term = \(Int64(term))
                    UNION ALL SELECT 1 FROM authorizations WHERE seal_term = \(Int64(term)) LIMIT 1
                    """
                ).rows.count
                guard inUse == 0 else { return false }
                return try await link.query(
                    "DELETE FROM key_terms WHERE term = \(Int64(term)) AND state = 'retired' RETURNING 1"
                ).rows.count > 0
            }
        }
    }

    public func rewrap(
        keyCheck: String, settings: [String: String], _ rewrap: @escaping @Sendable (WrappedTerm) throws -> WrappedTerm
    ) throws {
        try administering { link in
            try await link.transaction {
                // Nothing adds a term while this transaction holds the table.
                try await link.query("LOCK TABLE key_terms IN EXCLUSIVE MODE")
                let stored = try await Self.terms(on: link)
                guard !stored.isEmpty else {
                    throw VaultError.conflict("the vault has no key terms; nothing was changed")
                }
                for term in stored {
                    let wrapped = try rewrap(term)
                    guard wrapped.term == term.term else {
                        throw VaultError.conflict("rekey produced term \(wrapped.term) for term \(term.term)")
                    }
                    try await link.query(
                        "UPDATE key_terms SET wrapped_key = \(ByteBuffer(bytes: wrapped.wrappedKey)) WHERE term = \(Int64(term.term))"
                    )
                }
                try await Self.upsert(settings.merging([VaultSetting.keyCheck: keyCheck]) { $1 }, on: link)
            }
        }
    }

    /// Refuses a key change by a process whose master key is not the vault's current one.
    private static func checkKey(_ keyCheck: String, on link: PostgresLink) async throws {
        let stored = try await link.query(
            "SELECT value FROM vault_meta WHERE key = \(VaultSetting.keyCheck) FOR UPDATE"
        ).rows.first.map { try $0.decode(String.self) }
        guard let stored else { return try await upsert([VaultSetting.keyCheck: keyCheck], on: link) }
        guard stored == keyCheck else { throw VaultError.staleMasterKey }
    }

    public func termUsage() throws -> [UInt32: Int] {
        try administering { link in
            var usage: [UInt32: Int] = [:]
            for row in try await link.query(
                "SELECT term, (SELECT count(*) FROM credentials WHERE seal_term = term) FROM key_terms"
            ).rows {
                let (term, count) = try row.decode((Int64, Int64).self)
                usage[UInt32(truncatingIfNeeded: term)] = Int(count)
            }
            return usage
        }
    }

    public func setting(_ key: String) throws -> String? {
        try administering { link in
            guard try await Self.tableExists("vault_meta", on: link) else { return nil }
            return try await link.query("SELECT value FROM vault_meta WHERE key = \(key)").rows.first.map {
                try $0.decode(String.self)
            }
        }
    }

    public func setSettings(_ settings: [String: String]) throws {
        try administering { link in try await link.transaction { try await Self.upsert(settings, on: link) } }
    }

    public func addSetting(_ key: String, _ value: String) throws -> String {
        try administering { link in
            try await link.query(
                """
                INSERT INTO vault_meta (key, value) VALUES (\(key), \(value)) ON CONFLICT (key) DO NOTHING
                """)
            return try await link.query("SELECT value FROM vault_meta WHERE key = \(key)").rows.first
                .map { try $0.decode(String.self) } ?? value
        }
    }

    private static func upsert(_ settings: [String: String], on link: PostgresLink) async throws {
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) {
            try await link.query(
                """
                INSERT INTO vault_meta (key, value) VALUES (\(key), \(value))
                ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """)
        }
    }
}

extension PostgresDatabase: AdminStore {
    /// A consistent copy of a PostgreSQL vault is the database's own business (`pg_dump`, base
    /// backups, replicas): the rows are ciphertext either way.
    public func backup(to path: String) async throws -> Int64 {
        throw VaultError.conflict(
            "tokenvault backup writes SQLite files; back up a PostgreSQL vault with pg_dump or the server's own backups"
        )
    }

    /// The newest migration applied, read on a reader connection (health asks for it; the
    /// writers are the ledger's).
    public func schemaVersion() async throws -> Int {
        try await withReader { try await Self.appliedMigrationRecords(on: $0).keys.max() ?? 0 }
    }

    public func auditRowCount() async throws -> Int {
        try await withReader { reader in
            guard let row = try await reader.query("SELECT count(*) FROM audit_events").rows.first else { return 0 }
            return Int(try row.decode(Int64.self))
        }
    }

    public func credentialCountsByStatus() async throws -> [CredentialStatus: Int] {
        try await withReader { reader in
            var counts: [CredentialStatus: Int] = [:]
            for row in try await reader.query("SELECT status, count(*) FROM credentials GROUP BY status").rows {
                let (status, count) = try row.decode((String, Int64).self)
                if let status = CredentialStatus(rawValue: status) { counts[status] = Int(count) }
            }
            return counts
        }
    }

    public func webhookBacklog() async throws -> [String: Int] {
        try await withReader { reader in
            var counts: [String: Int] = [:]
            for row in try await reader.query("SELECT state, count(*) FROM webhook_deliveries GROUP BY state").rows {
                let (state, count) = try row.decode((String, Int64).self)
                counts[state] = Int(count)
            }
            return counts
        }
    }
}

extension PostgresDatabase {
    public func auditEvents(_ query: AuditQuery) async throws -> [StoredAuditEvent] {
        let credential = query.credentialID?.description
        return try await withReader { reader in
            try await reader.query(
                """
                SELECT \(unescaped: PostgresCredentialWriter.auditColumns) FROM audit_events
                WHERE id \(unescaped: query.order.sqlComparison) \(query.sqlCursor)
                AND (\(credential)::text IS NULL OR credential_id = \(credential))
                ORDER BY id\(unescaped: query.order.sqlDirection) LIMIT \(Int64(max(0, query.limit)))
                """
            ).rows.map(PostgresCredentialWriter.auditRow)
        }
    }

    public func auditChainEnds() async throws -> [AuditChainEnd] {
        try await withReader { reader in
            try await reader.query(
                "SELECT \(unescaped: PostgresCredentialWriter.chainEndColumns) FROM audit_chain ORDER BY chain, name"
            ).rows.compactMap(PostgresCredentialWriter.chainEnd)
        }
    }
}

extension PostgresDatabase: VaultBackend {
    public var writesPerTransaction: Int { 64 }
    public var groupsUnclaimedWrites: Bool { false }
    public var concurrentWriteTransactions: Int { writers.connections.count }
    public var rowCacheStatistics: RowCacheStatistics { Self.statistics(of: cache) }

    /// PostgreSQL checks its own pages; what can still be wrong is the schema's state: an index
    /// left invalid or a constraint left unvalidated (by hand, or an interrupted operation).
    public func integrityCheck() throws -> [String] {
        try administering { link in
            var problems: [String] = []
            for row in try await link.query(
                """
                SELECT c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = current_schema() AND NOT (i.indisvalid AND i.indisready)
                """
            ).rows {
                problems.append("index \(try row.decode(String.self)) is not valid")
            }
            for row in try await link.query(
                """
                SELECT con.conname::text FROM pg_constraint con JOIN pg_namespace n ON n.oid = con.connamespace
                WHERE n.nspname = current_schema() AND NOT con.convalidated
                """
            ).rows {
                problems.append("constraint \(try row.decode(String.self)) is not validated")
            }
            return problems.isEmpty ? ["ok"] : problems
        }
    }
}
