import TokenVaultCore

extension SQLiteDatabase: KeyTermStore {
    public func terms() throws -> [WrappedTerm] {
        try withReader { connection in
            // A vault not yet migrated has no key table: report "no terms" rather than an SQL error.
            guard try connection.statement("SELECT 1 FROM sqlite_master WHERE name = 'key_terms'").exists() else {
                return []
            }
            return try Self.terms(on: connection)
        }
    }

    static func terms(on connection: SQLiteConnection) throws -> [WrappedTerm] {
        let statement = try connection.statement(
            "SELECT term, wrapped_key, state, created_at FROM key_terms ORDER BY term")
        var terms: [WrappedTerm] = []
        while try statement.step() {
            terms.append(
                WrappedTerm(
                    term: UInt32(truncatingIfNeeded: statement.int64(0)), wrappedKey: statement.blob(1) ?? [],
                    isActive: statement.text(2) == "active", createdAt: Timestamp(milliseconds: statement.int64(3))))
        }
        return terms
    }

    public func addActiveTerm(_ term: WrappedTerm, keyCheck: String) throws {
        try writeTransaction(durability: .full) { connection in
            try Self.checkKey(keyCheck, on: connection)
            try connection.statement("UPDATE key_terms SET state = 'retired' WHERE state = 'active'").run()
            try connection.statement(
                "INSERT INTO key_terms (term, wrapped_key, state, created_at) VALUES (?1, ?2, 'active', ?3)"
            ).bind(term.term, term.wrappedKey, term.createdAt.milliseconds).run()
        }
    }

    public func removeTerm(_ term: UInt32) throws -> Bool {
        try writeTransaction(durability: .full) { connection in
            // An expired sign-in keeps no term: it can never be finished.
            try connection.statement("DELETE FROM authorizations WHERE seal_term = ?1 AND expires_at <= ?2")
                .bind(term, clock.now.milliseconds).run()
            let inUse = try connection.statement(
                """
                SELECT 1 FROM credentials WHERE seal_term = ?1
                UNION ALL SELECT 1 FROM authorizations WHERE seal_term = ?1 LIMIT 1
                """
            ).bind(term)
            guard try !inUse.exists() else { return false }
            try connection.statement("DELETE FROM key_terms WHERE term = ?1 AND state = 'retired'").bind(term).run()
            return connection.changes > 0
        }
    }

    public func rewrap(
        keyCheck: String, settings: [String: String], _ rewrap: @escaping @Sendable (WrappedTerm) throws -> WrappedTerm
    ) throws {
        try writeTransaction(durability: .full) { connection in
            let stored = try Self.terms(on: connection)
            var covered: Set<UInt32> = []
            for term in stored {
                let wrapped = try rewrap(term)
                guard wrapped.term == term.term else {
                    throw VaultError.conflict("rekey produced term \(wrapped.term) for term \(term.term)")
                }
                try connection.statement("UPDATE key_terms SET wrapped_key = ?2 WHERE term = ?1")
                    .bind(term.term, wrapped.wrappedKey).run()
                guard connection.changes == 1 else {
                    throw VaultError.conflict("key term \(term.term) changed during rekey; run rekey again")
                }
                covered.insert(term.term)
            }
            // Inside the same write transaction nothing can add a term, but check anyway: a term
            // left wrapped under the old key would make the vault unopenable.
            let after = Set(try Self.terms(on: connection).map(\.term))
            guard after == covered, !covered.isEmpty else {
                throw VaultError.conflict(
                    "rekey covered terms \(covered.sorted()) but the vault has \(after.sorted()); nothing was changed")
            }
            try Self.upsert(settings.merging([VaultSetting.keyCheck: keyCheck]) { $1 }, on: connection)
        }
    }

    /// Refuses a key change by a process whose master key is not the vault's current one.
    private static func checkKey(_ keyCheck: String, on connection: SQLiteConnection) throws {
        let stored = try connection.statement("SELECT value FROM vault_meta WHERE key = ?1")
            .bind(VaultSetting.keyCheck).firstText()
        guard let stored else {
            try upsert([VaultSetting.keyCheck: keyCheck], on: connection)
            return
        }
        guard stored == keyCheck else { throw VaultError.staleMasterKey }
    }

    public func termUsage() throws -> [UInt32: Int] {
        try withReader { connection in
            let statement = try connection.statement(
                "SELECT term, (SELECT count(*) FROM credentials WHERE seal_term = term) FROM key_terms")
            var usage: [UInt32: Int] = [:]
            while try statement.step() {
                usage[UInt32(truncatingIfNeeded: statement.int64(0))] = Int(statement.int64(1))
            }
            return usage
        }
    }

    public func setting(_ key: String) throws -> String? {
        try withReader { connection in
            guard try connection.statement("SELECT 1 FROM sqlite_master WHERE name = 'vault_meta'").exists() else {
                return nil
            }
            return try connection.statement("SELECT value FROM vault_meta WHERE key = ?1").bind(key).firstText()
        }
    }

    public func setSettings(_ settings: [String: String]) throws {
        try writeTransaction(durability: .full) { try Self.upsert(settings, on: $0) }
    }

    public func addSetting(_ key: String, _ value: String) throws -> String {
        try writeTransaction(durability: .full) { connection in
            try connection.statement("INSERT INTO vault_meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING")
                .bind(key, value).run()
            return try connection.statement("SELECT value FROM vault_meta WHERE key = ?1").bind(key).firstText()
                ?? value
        }
    }

    private static func upsert(_ settings: [String: String], on connection: SQLiteConnection) throws {
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) {
            try connection.statement(
                "INSERT INTO vault_meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            ).bind(key, value).run()
        }
    }
}
