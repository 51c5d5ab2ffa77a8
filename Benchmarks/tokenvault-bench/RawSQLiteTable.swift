import CSQLite

/// SQLite called directly: a table of `id TEXT PRIMARY KEY -> blob` in its own database file,
/// WAL mode, `synchronous=FULL`, every statement prepared once. It is the floor that the
/// vault's point read (benchmark 2) and durable put (benchmark 3) are measured against.
///
/// The key is TEXT like `credentials.id`, so a lookup takes the same path through SQLite as
/// the vault's (primary-key index, then the row), and the values are envelopes as long as
/// the vault's.
final class RawSQLiteTable {
    private var database: OpaquePointer?
    private var select: OpaquePointer?
    private var replace: OpaquePointer?
    private var begin: OpaquePointer?
    private var commit: OpaquePointer?

    init(path: String) throws {
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        guard sqlite3_open_v2(path, &database, flags, nil) == SQLITE_OK else {
            defer { sqlite3_close_v2(database) }
            throw BenchmarkError("cannot open \(path): \(String(cString: sqlite3_errmsg(database)))")
        }
        try execute(
            """
            PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
            CREATE TABLE blobs (id TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL) STRICT;
            """)
        select = try prepare("SELECT value FROM blobs WHERE id = ?1")
        replace = try prepare("INSERT OR REPLACE INTO blobs (id, value) VALUES (?1, ?2)")
        begin = try prepare("BEGIN IMMEDIATE")
        commit = try prepare("COMMIT")
    }

    deinit {
        for statement in [select, replace, begin, commit] { sqlite3_finalize(statement) }
        sqlite3_close_v2(database)
    }

    /// Inserts every row in one transaction (setup, not measured), then checkpoints the WAL.
    func fill(ids: [[CChar]], value: (Int) -> [UInt8]) throws {
        try execute("BEGIN")
        for (index, id) in ids.enumerated() { try write(id, value(index)) }
        try execute("COMMIT; PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// Point read by primary key: bind, one step, hand the blob to `body` in place, reset.
    func withValue<Result>(_ id: [CChar], _ body: (UnsafeRawBufferPointer) -> Result) throws -> Result {
        defer {
            sqlite3_reset(select)
            sqlite3_clear_bindings(select)
        }
        return try id.withUnsafeBufferPointer { id in
            sqlite3_bind_text(select, 1, id.baseAddress, Int32(id.count - 1), nil)
            guard sqlite3_step(select) == SQLITE_ROW else { throw failure("point read found no row") }
            let count = Int(sqlite3_column_bytes(select, 0))
            return body(UnsafeRawBufferPointer(start: sqlite3_column_blob(select, 0), count: count))
        }
    }

    /// One durable write: BEGIN IMMEDIATE; INSERT OR REPLACE; COMMIT (fsync of the WAL).
    func replaceDurably(_ id: [CChar], _ value: [UInt8]) throws {
        try step(begin)
        do {
            try write(id, value)
            try step(commit)
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    // MARK: Helpers

    private func write(_ id: [CChar], _ value: [UInt8]) throws {
        defer {
            sqlite3_reset(replace)
            sqlite3_clear_bindings(replace)
        }
        try id.withUnsafeBufferPointer { id in
            try value.withUnsafeBytes { value in
                sqlite3_bind_text(replace, 1, id.baseAddress, Int32(id.count - 1), nil)
                sqlite3_bind_blob(replace, 2, value.baseAddress, Int32(value.count), nil)
                guard sqlite3_step(replace) == SQLITE_DONE else { throw failure("INSERT OR REPLACE failed") }
            }
        }
    }

    private func step(_ statement: OpaquePointer?) throws {
        defer { sqlite3_reset(statement) }
        guard sqlite3_step(statement) == SQLITE_DONE else { throw failure("statement failed") }
    }

    private func prepare(_ sql: String) throws -> OpaquePointer? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(database, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK
        else { throw failure("cannot prepare '\(sql)'") }
        return statement
    }

    private func execute(_ sql: String) throws {
        guard sqlite3_exec(database, sql, nil, nil, nil) == SQLITE_OK else { throw failure("'\(sql)' failed") }
    }

    private func failure(_ what: String) -> BenchmarkError {
        BenchmarkError("raw SQLite: \(what): \(String(cString: sqlite3_errmsg(database)))")
    }
}

/// `text` as a NUL-terminated C string, built once so binding it costs no conversion.
func cString(_ text: String) -> [CChar] { Array(text.utf8CString) }
