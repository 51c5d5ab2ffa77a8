import TokenVaultCore

/// Applies `Migration`s in order, each in its own transaction, recording a SHA-256 of each file.
///
/// Start-up refuses (naming the file) when a shipped migration changed after it was applied,
/// or when the database was migrated by a newer binary. Checks only read; nothing is written
/// unless a migration is actually pending.
struct Migrator {
    let migrations: [Migration]
    let checksum: @Sendable ([UInt8]) -> String

    init(migrations: [Migration], checksum: @escaping @Sendable ([UInt8]) -> String) throws {
        for (index, migration) in migrations.enumerated() where migration.version != index + 1 {
            throw VaultError.migration(
                "migrations must be numbered 0001, 0002, ... without gaps; found \(migration.fileName) at position \(index + 1)"
            )
        }
        self.migrations = migrations
        self.checksum = checksum
    }

    /// Migrations recorded in the database: version -> (file name, checksum).
    func applied(_ connection: SQLiteConnection) throws -> [Int: (name: String, sha256: String)] {
        let exists = try connection.statement(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
        guard try exists.exists() else { return [:] }
        let rows = try connection.statement("SELECT version, name, sha256 FROM schema_migrations ORDER BY version")
        var applied: [Int: (String, String)] = [:]
        while try rows.step() {
            applied[Int(rows.int64(0))] = (rows.text(1) ?? "", rows.text(2) ?? "")
        }
        return applied
    }

    /// Throws if the database cannot be run by this binary; returns the pending migrations.
    func check(_ connection: SQLiteConnection) throws -> [Migration] {
        try pending(applied: try applied(connection), database: connection.path)
    }

    /// The migrations not yet applied, given those recorded in `database` (either backend).
    /// Throws when the database is newer than this binary or a recorded file changed since.
    func pending(applied: [Int: (name: String, sha256: String)], database: String) throws -> [Migration] {
        let known = migrations.count
        if let newest = applied.keys.max(), newest > known {
            let name = applied[newest]?.name ?? "?"
            throw VaultError.migration(
                "the database \(database) has schema version \(newest) (\(name)), newer than this binary "
                    + "(which knows up to \(known)); run a newer tokenvault or restore a backup")
        }
        for migration in migrations {
            guard let record = applied[migration.version] else { continue }
            let current = checksum(migration.sql)
            guard record.sha256 == current else {
                throw VaultError.migration(
                    "migration \(migration.fileName) was changed after it was applied to \(database) "
                        + "(recorded sha256 \(record.sha256.prefix(12))…, file \(current.prefix(12))…); "
                        + "shipped migrations must never be edited: restore the file and add a new migration instead")
            }
        }
        return migrations.filter { applied[$0.version] == nil }
    }

    /// Applies every pending migration, each in its own transaction.
    func migrate(_ connection: SQLiteConnection, now: Timestamp) throws -> [Migration] {
        let pending = try check(connection)
        guard !pending.isEmpty else { return [] }
        try connection.execute(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    INTEGER PRIMARY KEY NOT NULL,
                name       TEXT NOT NULL,
                sha256     TEXT NOT NULL CHECK (length(sha256) = 64),
                applied_at INTEGER NOT NULL
            ) STRICT
            """)
        for migration in pending {
            do {
                try connection.transaction {
                    try connection.execute(String(decoding: migration.sql, as: UTF8.self))
                    try connection.statement(
                        "INSERT INTO schema_migrations (version, name, sha256, applied_at) VALUES (?, ?, ?, ?)"
                    ).bind(migration.version, migration.fileName, checksum(migration.sql), now.milliseconds).run()
                }
            } catch let error as VaultError {
                throw VaultError.migration(
                    "migration \(migration.fileName) failed and was rolled back: \(error.message)")
            }
        }
        return pending
    }
}
