import Foundation
import Synchronization
import TokenVaultCore

extension SQLiteDatabase: CredentialStore {
    static let metadataColumns = CredentialColumn.metadataSelectList
    static let recordColumns = CredentialColumn.recordSelectList

    /// From the cache when it holds the row, else from a reader (and then cached).
    public func record(_ id: CredentialID) async throws -> SealedCredentialRecord? {
        if let cached = cache.record(id) { return cached }
        return try await threads.run { [self] in
            try cachedRecord(id) { try withReader { try Self.record(id, on: $0) } }
        }
    }

    /// The same, with no busy handler for the read: SQLITE_BUSY comes back at once (as a
    /// storage error).
    public func recordWithoutWaiting(_ id: CredentialID) throws -> SealedCredentialRecord? {
        try cachedRecord(id) {
            try withReader { connection in
                connection.setBusyTimeout(milliseconds: 0)
                defer { connection.setBusyTimeout(milliseconds: SQLiteConnection.defaultBusyTimeoutMilliseconds) }
                return try Self.record(id, on: connection)
            }
        }
    }

    /// The ticket is taken before the read, so a write committed while it runs keeps its older
    /// row out of the cache.
    private func cachedRecord(_ id: CredentialID, read: () throws -> SealedCredentialRecord?) throws
        -> SealedCredentialRecord?
    {
        if let cached = cache.record(id) { return cached }
        let ticket = cache.ticket(for: id)
        cache.countMiss()
        let record = try read()
        if let record { cache.insert(record, ticket: ticket) }
        return record
    }

    /// One statement per combination of the filters present (built once, as the point read's
    /// statement is), each naming only its own conditions: with `(?1 IS NULL OR namespace = ?1)`
    /// and the like, SQLite cannot know at planning which ones apply, and scanned the whole table
    /// in id order, from the first row to the cursor and past every row of another namespace.
    /// Now `id > cursor` seeks, and a namespace reads through the namespace index in id order
    /// (a caller's namespaces too: one at a time, or past `namespacesReadApart` all together and
    /// sorted). `?5`, the limit, is in every shape, so every filter's number is in range.
    static let listQueries: [String] = (0..<16).map { shape in
        let conditions = [
            "namespace = ?1", "status = ?2", "id > ?3", "namespace IN (SELECT value FROM json_each(?4))",
        ].enumerated().filter { shape & (1 << $0.offset) != 0 }.map(\.element)
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ") + " "
        return "SELECT \(metadataColumns) FROM credentials \(filter)ORDER BY id LIMIT ?5"
    }

    /// Up to this many namespaces a caller may list are read one by one and merged (below).
    static let namespacesReadApart = 16

    /// The cache's count: every change of a row goes through this process's writer, which tells
    /// the cache as it begins and ends.
    public func changeCount() -> UInt64? { cache.changeCount() }

    public func list(_ query: CredentialQuery) async throws -> [CredentialMetadata] {
        try await threads.run { [self] in try listed(query) }
    }

    private func listed(_ query: CredentialQuery) throws -> [CredentialMetadata] {
        var query = query
        if let namespaces = query.namespaces {
            if let namespace = query.namespace {
                // The caller's namespaces only narrow the one asked for.
                guard namespaces.contains(namespace) else { return [] }
                query.namespaces = nil
            } else if namespaces.count == 1 {
                query.namespace = namespaces.first
                query.namespaces = nil
            } else if namespaces.count <= Self.namespacesReadApart {
                // A page of each through the namespace index, in id order from the cursor on,
                // then the first `limit` of them: `namespace IN (...)` read every row of every
                // namespace and sorted them all, for each page.
                var merged: [CredentialMetadata] = []
                for namespace in namespaces {
                    var one = query
                    (one.namespace, one.namespaces) = (namespace, nil)
                    merged += try listed(one)
                }
                return Array(merged.sorted { $0.id < $1.id }.prefix(max(0, query.limit)))
            }
        }
        return try withReader { [query] connection in
            // A set of namespaces is bound as one JSON array: one statement for any number.
            let namespaces = query.namespaces.map { CompactJSONColumn.encode(strings: $0.sorted()) }
            let shape =
                (query.namespace == nil ? 0 : 1) | (query.status == nil ? 0 : 2) | (query.after == nil ? 0 : 4)
                | (namespaces == nil ? 0 : 8)
            let statement = try connection.statement(Self.listQueries[shape])
            try statement.bind(
                query.namespace, query.status?.rawValue, query.after?.description, namespaces, max(0, query.limit))
            var result: [CredentialMetadata] = []
            result.reserveCapacity(max(0, min(query.limit, 500)))
            while try statement.step() { result.append(try statement.metadata()) }
            return result
        }
    }

    public func records(after: CredentialID?, limit: Int) async throws -> [SealedCredentialRecord] {
        try await threads.run { [self] in
            try withReader { connection in
                let statement = try connection.statement(
                    "SELECT \(Self.recordColumns) FROM credentials WHERE ?1 IS NULL OR id > ?1 ORDER BY id LIMIT ?2")
                try statement.bind(after?.description, limit)
                return try Self.records(from: statement)
            }
        }
    }

    public func records(notSealedWith term: UInt32, limit: Int) async throws -> [SealedCredentialRecord] {
        try await threads.run { [self] in
            try withReader { connection in
                let statement = try connection.statement(
                    "SELECT \(Self.recordColumns) FROM credentials WHERE seal_term <> ?1 ORDER BY seal_term LIMIT ?2")
                try statement.bind(term, limit)
                return try Self.records(from: statement)
            }
        }
    }

    /// Rows the transaction changes are kept out of the cache from the first change until it has
    /// committed or failed (a commit whose outcome is unknown may have happened); rows it wrote
    /// whole are cached as written once it has committed (`RecordCache.Writes`).
    public func write<Result: Sendable>(
        durability: Durability, _ body: @escaping @Sendable (any CredentialWriter) async throws -> Result
    ) async throws -> Result {
        let writes = Mutex(RecordCache.Writes())
        var committed = false
        defer { cache.end(writes.withLock { $0 }, committed: committed) }
        let result = try await writeTransaction(durability: durability) { [cache, clock] connection in
            let writer = SQLiteCredentialWriter(connection: connection, cache: cache, clock: clock)
            defer { writes.withLock { $0 = writer.cacheWrites } }
            return try await body(writer)
        }
        committed = true
        return result
    }

    // MARK: Row mapping

    /// Built once: the point read is the hottest query (every token read).
    private static let recordByID = "SELECT \(recordColumns) FROM credentials WHERE id = ?1"

    static func record(_ id: CredentialID, on connection: SQLiteConnection) throws -> SealedCredentialRecord? {
        let statement = try connection.statement(recordByID)
        try statement.bind(id.description)
        // The row's id is the one asked for (primary key): no need to parse and validate it again.
        return try records(from: statement, knownID: id).first
    }

    static func records(from statement: SQLiteStatement, knownID: CredentialID? = nil) throws
        -> [SealedCredentialRecord]
    {
        var result: [SealedCredentialRecord] = []
        while try statement.step() { result.append(try statement.record(knownID: knownID)) }
        return result
    }
}

/// Writes inside one transaction on the writer connection. It notes the credentials it touched,
/// for the cache.
final class SQLiteCredentialWriter: CredentialWriter {
    let connection: SQLiteConnection
    private let cache: RecordCache
    /// What the transaction changed, for the cache once it has ended.
    var cacheWrites = RecordCache.Writes()
    /// The active term, read once per transaction (a writer lives for one): nothing inside a
    /// credential transaction changes `key_terms`, and a group commit seals hundreds of rows.
    private var term: UInt32?

    /// The database's clock (this host's: one host owns the file), for the outbox's times.
    let clock: any VaultClock

    init(connection: SQLiteConnection, cache: RecordCache, clock: any VaultClock) {
        self.connection = connection
        self.cache = cache
        self.clock = clock
    }

    /// Every statement that changes a credential row says so here first.
    func touch(_ id: CredentialID) {
        cacheWrites.touch(id, in: cache)
    }

    func record(_ id: CredentialID) async throws -> SealedCredentialRecord? {
        try SQLiteDatabase.record(id, on: connection)
    }

    func activeTerm() async throws -> UInt32 {
        if let term { return term }
        guard let read = try connection.statement("SELECT term FROM key_terms WHERE state = 'active'").firstInt64()
        else { throw VaultError.storage("this vault has no active data key term") }
        term = UInt32(truncatingIfNeeded: read)
        return UInt32(truncatingIfNeeded: read)
    }

    private static let upsert = """
        INSERT INTO credentials (\(CredentialColumn.insertList)) VALUES (\(CredentialColumn.insertPlaceholders))
        ON CONFLICT (id) DO UPDATE SET \(CredentialColumn.updateList)
        """

    func save(_ record: SealedCredentialRecord) async throws {
        touch(record.metadata.id)
        let statement = try connection.statement(Self.upsert)
        for (column, value) in zip(CredentialColumn.allCases, CredentialColumn.values(of: record)) {
            try statement.bind(at: column.rawValue + 1, value)
        }
        try statement.run()
        cacheWrites.saved(record)
    }

    func delete(_ id: CredentialID) async throws -> Bool {
        touch(id)
        try connection.statement("DELETE FROM credentials WHERE id = ?1").bind(id.description).run()
        return connection.changes > 0
    }
}
