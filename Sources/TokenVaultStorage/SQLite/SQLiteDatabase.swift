import Foundation
import TokenVaultCore

/// The vault's SQLite database: one writer connection and a small pool of readers (WAL lets
/// reads run beside a write). Implements `CredentialStore` and `KeyTermStore`; it stores and
/// returns envelopes without ever seeing a plaintext secret.
///
/// The storage protocols' methods are `async`: each takes its connection on a thread of
/// `DatabaseThreads`, where SQLite may block, so no caller hops first; the server's fast paths
/// alone read one row synchronously without waiting, on purpose. The other methods (migrations,
/// key terms, checks) block their caller, and are called at start-up and by tools.
///
/// Rows read are kept sealed in a `RecordCache`: this process is the file's only writer while it
/// serves (`DatabaseLock`), so its own writes are every change, and each drops what it touched
/// from the cache once committed (or once its outcome is unknown).
public final class SQLiteDatabase: @unchecked Sendable {
    public let path: String
    let migrator: Migrator
    /// The one writer connection, lent to one holder at a time: async transactions and blocking
    /// callers alike.
    private let writer: ConnectionLender<SQLiteConnection>
    /// Where the ledger's transactions run, their body's calls included (`write(durability:_:)`).
    private let transactionThread = TransactionThread()
    private var idleReaders: [SQLiteConnection] = []
    private let readersLock = NSLock()
    private let maximumIdleReaders: Int
    let clock: any VaultClock
    let cache: RecordCache
    /// Where reads, and writes outside the ledger's transactions, block (`DatabaseThreads`): a
    /// thread for each reader kept idle and two to spare.
    let threads: DatabaseThreads

    /// The cache's default bound: about 16,000 rows of T-ID's size (a row costs about 1 KB),
    /// the working set of a busy node, for 16 MiB of memory. A row is kept from its second read
    /// on, so a sweep of rows read once does not fill it (`RecordCache.Doorkeeper`).
    public static let defaultCacheBytes = 16 << 20

    /// Opens (creating if needed) the database at `path` and checks its schema against the
    /// embedded migrations without writing anything; call `migrate()` to apply pending ones.
    /// `checksum` is SHA-256 in hex (TokenVaultCrypto's), injected so Storage stays free of crypto.
    /// `busyTimeoutMilliseconds`: how long a write waits for another connection's lock.
    /// `cacheBytes`: how much the cache of sealed rows may hold.
    public init(
        path: String, migrations: [Migration]? = nil, checksum: @escaping @Sendable ([UInt8]) -> String,
        clock: any VaultClock = SystemClock(), maximumIdleReaders: Int = 4,
        busyTimeoutMilliseconds: Int32 = 5000, cacheBytes: Int = defaultCacheBytes
    ) throws {
        self.path = path
        self.clock = clock
        cache = RecordCache(capacity: .max, bytes: cacheBytes, keepsRowsReadOnce: false)
        self.maximumIdleReaders = maximumIdleReaders
        threads = DatabaseThreads(threads: maximumIdleReaders + 2)
        migrator = try Migrator(migrations: migrations ?? EmbeddedMigrations.all(), checksum: checksum)
        let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        // WAL: readers never block the writer; NORMAL is durable against process crashes, and
        // writes that carry a new refresh token raise it to FULL for their commit.
        if try connection.scalarText("PRAGMA journal_mode")?.lowercased() != "wal" {
            guard try connection.scalarText("PRAGMA journal_mode = WAL")?.lowercased() == "wal" else {
                throw VaultError.storage("cannot switch \(path) to WAL mode")
            }
        }
        try connection.execute("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON")
        _ = try migrator.check(connection)
        writer = ConnectionLender([connection])
    }

    /// Migrations this database still needs.
    public func pendingMigrations() throws -> [Migration] {
        try withWriter { try migrator.check($0) }
    }

    /// Applies pending migrations, each in a transaction; returns what was applied.
    @discardableResult
    public func migrate() throws -> [Migration] {
        try withWriter { try migrator.migrate($0, now: clock.now) }
    }

    /// Migrations recorded in the database, for diagnostics.
    public func appliedMigrations() throws -> [(version: Int, name: String, sha256: String)] {
        try withWriter { connection in
            try migrator.applied(connection).sorted { $0.key < $1.key }.map { ($0.key, $0.value.name, $0.value.sha256) }
        }
    }

    /// `PRAGMA integrity_check`: "ok" or the problems SQLite found.
    public func integrityCheck() throws -> [String] {
        try withReader { connection in
            let statement = try connection.statement("PRAGMA integrity_check")
            var lines: [String] = []
            while try statement.step() { lines.append(statement.text(0) ?? "") }
            return lines
        }
    }

    /// Checkpoints the WAL into the main file (used before byte-level inspection and backups).
    public func checkpoint() throws {
        try withWriter { try $0.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    public func close() {
        writer.withConnection { $0.close() }
        readersLock.withLock {
            idleReaders.forEach { $0.close() }
            idleReaders.removeAll()
        }
    }

    // MARK: Connections

    /// The writer connection for anything (migrations, tests): `body` may change any row, so the
    /// cache forgets every row afterwards.
    func withWriter<Result>(_ body: (SQLiteConnection) throws -> Result) throws -> Result {
        defer { cache.invalidateAll() }
        return try writer.withConnection(body)
    }

    /// Runs `body` in a write transaction at the given durability. Only two callers change
    /// credential rows in one, and each tells the cache: `write(durability:)` (its writer notes
    /// what it touched) and `replaceAllRows`.
    func writeTransaction<Result>(durability: Durability, _ body: (SQLiteConnection) throws -> Result) throws -> Result
    {
        try writer.withConnection { connection in
            let restore = try Self.setSynchronous(for: durability, on: connection)
            defer { restore() }
            return try connection.transaction { try body(connection) }
        }
    }

    /// `writeTransaction` for a body that awaits: it runs on `transactionThread`, where the
    /// writer's statements block nobody else, and waits for the writer suspended (taken and
    /// given back on that thread).
    func writeTransaction<Result: Sendable>(
        durability: Durability, _ body: (SQLiteConnection) async throws -> Result
    ) async throws -> Result {
        try await withTaskExecutorPreference(transactionThread) { [self] in
            let connection = await writer.take()
            defer { writer.giveBack(connection) }
            let restore = try Self.setSynchronous(for: durability, on: connection)
            defer { restore() }
            return try await connection.transaction { try await body(connection) }
        }
    }

    /// Sets the writer's `synchronous` for a commit at `durability` (`.full` waits for the disk:
    /// FULL) and answers what sets it back to the usual NORMAL afterwards.
    private static func setSynchronous(
        for durability: Durability, on connection: SQLiteConnection
    ) throws -> () -> Void {
        guard durability == .full else { return {} }
        try connection.execute("PRAGMA synchronous = FULL")
        return { try? connection.execute("PRAGMA synchronous = NORMAL") }
    }

    func withReader<Result>(_ body: (SQLiteConnection) throws -> Result) throws -> Result {
        let connection =
            try readersLock.withLock({ idleReaders.popLast() })
            ?? {
                let reader = try SQLiteConnection(path: path, create: false)
                try reader.execute("PRAGMA query_only = ON")
                return reader
            }()
        // A read that failed part-way may have left a statement on a row, and with it a read
        // transaction open: pooled, that reader would serve (and the cache keep) an old snapshot.
        var failed = true
        defer {
            readersLock.withLock {
                if !failed && idleReaders.count < maximumIdleReaders {
                    idleReaders.append(connection)
                } else {
                    connection.close()
                }
            }
        }
        let result = try body(connection)
        failed = false
        return result
    }
}
