import CSQLite
import TokenVaultCore

/// One SQLite connection with a cache of prepared statements.
///
/// Not thread-safe by itself: `SQLiteDatabase` hands each connection to one thread at a time.
/// Error messages carry SQLite's message, never a bound argument.
final class SQLiteConnection: @unchecked Sendable {
    let path: String
    private(set) var handle: OpaquePointer?
    private var statements: [String: SQLiteStatement] = [:]

    /// How long a statement waits for a lock held by another connection before SQLITE_BUSY.
    static let defaultBusyTimeoutMilliseconds: Int32 = 5000

    /// Process-wide SQLite configuration, applied once before the first connection opens
    /// (see `tokenvault_sqlite3_disable_memory_statistics` in the CSQLite shim).
    private static let configureSQLite: Void = {
        _ = tokenvault_sqlite3_disable_memory_statistics()
    }()

    init(
        path: String, readOnly: Bool = false, create: Bool = true,
        busyTimeoutMilliseconds: Int32 = defaultBusyTimeoutMilliseconds
    ) throws {
        self.path = path
        Self.configureSQLite
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        flags |= readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
        if create && !readOnly { flags |= SQLITE_OPEN_CREATE }
        let result = sqlite3_open_v2(path, &handle, flags, nil)
        guard result == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(result))
            sqlite3_close_v2(handle)
            handle = nil
            throw VaultError.storage("cannot open database \(path): \(message)")
        }
        sqlite3_busy_timeout(handle, busyTimeoutMilliseconds)
    }

    deinit { close() }

    func setBusyTimeout(milliseconds: Int32) {
        sqlite3_busy_timeout(handle, milliseconds)
    }

    func close() {
        for statement in statements.values { statement.finalize() }
        statements.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// Runs one or more statements without results.
    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &message)
        if result != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(result))
            sqlite3_free(message)
            throw failure(result, text)
        }
    }

    /// A prepared statement for `sql`, reused across calls (reset before it is handed out).
    func statement(_ sql: String) throws -> SQLiteStatement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var raw: OpaquePointer?
        let result = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard result == SQLITE_OK, let raw else { throw error(result) }
        let statement = SQLiteStatement(raw, connection: self)
        statements[sql] = statement
        return statement
    }

    /// The first column of the first row, as text (uncached: for PRAGMAs run once).
    func scalarText(_ sql: String) throws -> String? {
        var raw: OpaquePointer?
        let result = sqlite3_prepare_v2(handle, sql, -1, &raw, nil)
        guard result == SQLITE_OK, let raw else { throw error(result) }
        let statement = SQLiteStatement(raw, connection: self)
        defer { statement.finalize() }
        return try statement.firstText()
    }

    var changes: Int { Int(sqlite3_changes(handle)) }

    func error(_ result: Int32) -> VaultError { failure(result, String(cString: sqlite3_errmsg(handle))) }

    /// A full disk is said plainly, and as a condition that passes (`storage_unavailable`): the
    /// ledger holds what it could not write and commits it when space returns. The caller may
    /// read it (a `PUT`'s answer), so it names no file.
    private func failure(_ result: Int32, _ text: String) -> VaultError {
        guard result & 0xff == SQLITE_FULL else { return VaultError.storage("SQLite error \(result): \(text)") }
        return VaultError.storageUnavailable(
            "the database or the disk holding it is full (SQLite error \(result): \(text)); what could not be "
                + "written is held and written when space returns")
    }

    /// Begins, runs `body`, commits; rolls back if anything throws.
    func transaction<Result>(immediate: Bool = true, _ body: () throws -> Result) throws -> Result {
        try execute(immediate ? "BEGIN IMMEDIATE" : "BEGIN")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// The same for a body that awaits (the writer's calls, continuing on the connection's
    /// `TransactionThread`).
    func transaction<Result>(_ body: () async throws -> Result) async throws -> Result {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try await body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }
}

/// A prepared statement. Columns and parameters are numbered as in SQLite (parameters from 1).
final class SQLiteStatement {
    private let raw: OpaquePointer
    private unowned let connection: SQLiteConnection
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    init(_ raw: OpaquePointer, connection: SQLiteConnection) {
        self.raw = raw
        self.connection = connection
    }

    func finalize() { sqlite3_finalize(raw) }

    func reset() {
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
    }

    @discardableResult
    func bind(_ values: (any SQLiteBindable)?...) throws -> SQLiteStatement {
        for (offset, value) in values.enumerated() { try bind(at: Int32(offset + 1), value) }
        return self
    }

    /// Binds one parameter (numbered from 1) of any bindable type, or NULL.
    func bind(at index: Int32, _ value: (any SQLiteBindable)?) throws {
        let result: Int32
        switch value {
        case nil: result = sqlite3_bind_null(raw, index)
        case let text as String: result = sqlite3_bind_text(raw, index, text, -1, Self.transient)
        case let integer as Int64: result = sqlite3_bind_int64(raw, index, integer)
        case let integer as Int: result = sqlite3_bind_int64(raw, index, Int64(integer))
        case let integer as UInt32: result = sqlite3_bind_int64(raw, index, Int64(integer))
        case let integer as Int32: result = sqlite3_bind_int64(raw, index, Int64(integer))
        case let blob as [UInt8]:
            result = blob.withUnsafeBytes {
                sqlite3_bind_blob(raw, index, $0.baseAddress, Int32($0.count), Self.transient)
            }
        default: preconditionFailure("unsupported SQLite binding type")
        }
        guard result == SQLITE_OK else { throw connection.error(result) }
    }

    /// Binds one integer parameter, or NULL (typed: no dynamic casts, for batches of many values).
    func bind(at index: Int32, _ value: ColumnValue) throws {
        switch value {
        case .null: try bind(at: index, nil as (any SQLiteBindable)?)
        case .integer(let integer): try bind(at: index, integer)
        case .text(let text): try bind(at: index, text)
        case .blob(let blob): try bind(at: index, blob)
        }
    }

    func bind(at index: Int32, _ value: Int64?) throws {
        let result = value.map { sqlite3_bind_int64(raw, index, $0) } ?? sqlite3_bind_null(raw, index)
        guard result == SQLITE_OK else { throw connection.error(result) }
    }

    /// Binds one text parameter, or NULL.
    func bind(at index: Int32, _ value: String?) throws {
        let result =
            value.map { sqlite3_bind_text(raw, index, $0, -1, Self.transient) } ?? sqlite3_bind_null(raw, index)
        guard result == SQLITE_OK else { throw connection.error(result) }
    }

    /// Advances to the next row; false when done.
    func step() throws -> Bool {
        switch sqlite3_step(raw) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let result: throw connection.error(result)
        }
    }

    /// Runs a statement that returns no rows.
    func run() throws {
        while try step() {}
    }

    /// Whether the statement yields a row. Resets it, so no read transaction stays open.
    func exists() throws -> Bool {
        defer { sqlite3_reset(raw) }
        return try step()
    }

    /// Column 0 of the first row as text, or nil without a row. Resets the statement.
    func firstText() throws -> String? {
        defer { sqlite3_reset(raw) }
        return try step() ? text(0) : nil
    }

    /// Column 0 of the first row as an integer, or nil without a row (or for NULL). Resets the statement.
    func firstInt64() throws -> Int64? {
        defer { sqlite3_reset(raw) }
        return try step() ? optionalInt64(0) : nil
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(raw, column) == SQLITE_NULL }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }
    func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

    func text(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(raw, column) else { return nil }
        return String(cString: pointer)
    }

    func blob(_ column: Int32) -> [UInt8]? {
        guard !isNull(column) else { return nil }
        let count = Int(sqlite3_column_bytes(raw, column))
        guard count > 0, let pointer = sqlite3_column_blob(raw, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// The result's column names, in order.
    var columnNames: [String] {
        (0..<sqlite3_column_count(raw)).map { String(cString: sqlite3_column_name(raw, $0)) }
    }

    /// A column of the current row as SQLite stores it.
    func value(_ column: Int32) -> ColumnValue {
        switch sqlite3_column_type(raw, column) {
        case SQLITE_NULL: .null
        case SQLITE_INTEGER: .integer(int64(column))
        case SQLITE_BLOB: .blob(blob(column) ?? [])
        default: .text(text(column) ?? "")
        }
    }
}

/// The current row of a credential SELECT built from `CredentialColumn`'s lists, read by column
/// name, never by a number of its own.
extension SQLiteStatement: CredentialRow {
    func text(_ column: CredentialColumn) -> String? { text(column.selectIndex) }
    func integer(_ column: CredentialColumn) -> Int64? { optionalInt64(column.selectIndex) }
    func blob(_ column: CredentialColumn) -> [UInt8]? { blob(column.selectIndex) }
    var hasRefreshToken: Bool { int64(CredentialColumn.hasRefreshTokenIndex) != 0 }
    var hasIDToken: Bool { int64(CredentialColumn.hasIDTokenIndex) != 0 }
}

/// Values a statement can bind.
protocol SQLiteBindable {}
extension String: SQLiteBindable {}
extension Int64: SQLiteBindable {}
extension Int: SQLiteBindable {}
extension Int32: SQLiteBindable {}
extension UInt32: SQLiteBindable {}
extension Array: SQLiteBindable where Element == UInt8 {}
