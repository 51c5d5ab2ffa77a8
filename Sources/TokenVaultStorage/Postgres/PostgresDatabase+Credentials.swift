import NIOCore
import PostgresNIO
import TokenVaultCore

/// Reads of credential rows and of the refresh journal, and the write transaction.
extension PostgresDatabase: CredentialStore {
    static let metadataColumns = CredentialColumn.metadataSelectList
    static let recordColumns = CredentialColumn.recordSelectList

    /// From the cache when it holds the row and the change listener is connected, else from a
    /// reader (and then cached). When the database cannot be reached, the last row this node
    /// read stands in: its tokens are served until they expire (no node can change the row
    /// meanwhile, unless only this node is cut off; docs/scale-out.md).
    public func record(_ id: CredentialID) async throws -> SealedCredentialRecord? {
        if cacheTrusted.load(ordering: .acquiring), let cached = cache.record(id) { return cached }
        return try await readRecord(id)
    }

    private func readRecord(_ id: CredentialID) async throws -> SealedCredentialRecord? {
        let ticket = cache.ticket(for: id)
        cache.countMiss()
        let record: SealedCredentialRecord?
        var unreachable = false
        do {
            record = try await withReader { reader in
                do {
                    return try await reader.credentialRecord(id)
                } catch let error as VaultError where error.code == .storageUnavailable && !reader.isRefusing {
                    // A lost connection: once more, on a new one.
                    do {
                        return try await reader.credentialRecord(id)
                    } catch {
                        unreachable = reader.isRefusing
                        throw error
                    }
                }
            }
        } catch let error as VaultError where error.code == .storageUnavailable {
            // Only when the database cannot be reached at all (a connect refused or timed out),
            // not for a statement that failed on a database that answers.
            guard unreachable || readers.isRefusing, let lastSeen = cache.record(id) else {
                throw error
            }
            return lastSeen
        }
        if let record { cache.insert(record, ticket: ticket) } else { cache.invalidate(id) }
        return record
    }

    /// The cache only: an event loop must never wait for the database. A miss throws, and the
    /// caller takes the path that may wait.
    public func recordWithoutWaiting(_ id: CredentialID) throws -> SealedCredentialRecord? {
        guard cacheTrusted.load(ordering: .acquiring), let cached = cache.record(id) else {
            throw VaultError.storageUnavailable("credential \(id) is not cached here; read it from the database")
        }
        return cached
    }

    /// The cache's count, while it is trusted: other nodes' changes are counted as their
    /// notifications arrive, and are not heard while the listener is away.
    public func changeCount() -> UInt64? {
        guard cacheTrusted.load(ordering: .acquiring) else { return nil }
        return cache.changeCount()
    }

    public func list(_ query: CredentialQuery) async throws -> [CredentialMetadata] {
        let namespaces = query.namespaces.map { Array($0).sorted() }
        return try await withReader { reader in
            try await reader.query(
                """
                SELECT \(unescaped: Self.metadataColumns) FROM credentials
                WHERE (\(query.namespace)::text IS NULL OR namespace = \(query.namespace))
                  AND (\(query.status?.rawValue)::text IS NULL OR status = \(query.status?.rawValue))
                  AND (\(query.after?.description)::text IS NULL OR id > \(query.after?.description))
                  AND (\(namespaces)::text[] IS NULL OR namespace = ANY(\(namespaces)))
                ORDER BY id LIMIT \(Int64(max(0, query.limit)))
                """
            ).rows.map { try PostgresCredentialRow($0).metadata() }
        }
    }

    public func records(after: CredentialID?, limit: Int) async throws -> [SealedCredentialRecord] {
        try await withReader { reader in
            try await reader.query(
                """
                SELECT \(unescaped: Self.recordColumns) FROM credentials
                WHERE \(after?.description)::text IS NULL OR id > \(after?.description)
                ORDER BY id LIMIT \(Int64(limit))
                """
            ).rows.map { try PostgresCredentialRow($0).record() }
        }
    }

    public func records(notSealedWith term: UInt32, limit: Int) async throws -> [SealedCredentialRecord] {
        try await withReader { reader in
            try await reader.query(
                """
                SELECT \(unescaped: Self.recordColumns) FROM credentials WHERE seal_term <> \(Int64(term))
                ORDER BY seal_term LIMIT \(Int64(limit))
                """
            ).rows.map { try PostgresCredentialRow($0).record() }
        }
    }

    /// A write waits at most this long for a row another node has locked (a node stuck in the
    /// middle of a transaction, cut off, holds its locks until its connection is found dead);
    /// then it fails as `storage_unavailable` and is retried.
    static let lockTimeout = "SET LOCAL lock_timeout = '5s'"

    /// One transaction on a writer connection. `.normal` commits without waiting for the
    /// server's flush (`synchronous_commit = off`); `.full` waits for it (and for its standbys'
    /// as the server is configured). Rows the transaction changes stay out of this node's cache
    /// until it has ended (other nodes hear of it through the change trigger); rows it wrote
    /// whole are cached as written once it has committed (`RecordCache.endWrites`).
    public func write<Result: Sendable>(
        durability: Durability, _ body: @escaping @Sendable (any CredentialWriter) async throws -> Result
    ) async throws -> Result {
        let link = await writers.take()
        defer { writers.giveBack(link) }
        let transaction = PostgresCredentialWriter(link: link, cache: cache, timelines: timelines)
        var committed = false
        // Also after a failure: a commit whose outcome is unknown may have happened.
        defer { cache.end(transaction.cacheWrites, committed: committed) }
        let result = try await link.transaction(
            begin: [Self.lockTimeout] + (durability == .full ? [] : ["SET LOCAL synchronous_commit = off"]),
            rollbackOnly: { transaction.rollbackOnly }
        ) { try await body(transaction) }
        // A statement that failed leaves the transaction aborted, and PostgreSQL answers its
        // COMMIT with a rollback, not an error: nothing of it is kept then.
        committed = transaction.statementFailure == nil
        return result
    }
}

extension PostgresDatabase: RefreshJournal {
    /// How long a node's claim on a due credential keeps the other nodes' scans off it: long
    /// enough for the node to journal the attempt (which moves `refresh_at` to the lease's end),
    /// short enough that a node that died after its scan delays nothing much.
    static let claimMilliseconds: Int64 = 5000

    /// One statement: the due credentials nobody else claimed, claimed for this node (two nodes
    /// claiming the same row take turns on it, and the second finds it taken). A claim of this
    /// node's still running is returned as it is, not written again (the scan runs at every
    /// finished refresh). Those in `skipping` (this node's refreshes in flight, due until
    /// journalled) are not returned: under a slow provider they were most of every scan's rows.
    /// Their claims that lapsed are taken again, as the scan always did for them, so that another
    /// node does not start what waits at this node's provider gate. All claims are locked in one
    /// `refresh_at`, then id, order, so that two scans lock them in the same order.
    public func dueCredentials(at now: Timestamp, limit: Int, skipping: Set<CredentialID>) async throws
        -> [ScheduledCredential]
    {
        let (at, until) = (now.milliseconds, now.milliseconds + Self.claimMilliseconds)
        let skipped = skipping.map(\.description)
        return try await withReader { reader in
            try await reader.query(
                """
                WITH due AS (
                    SELECT id, refresh_at, status FROM credentials c
                    WHERE refresh_at IS NOT NULL AND refresh_at <= \(at) AND NOT (c.id = ANY(\(skipped)))
                      AND NOT EXISTS (SELECT 1 FROM refresh_claims k
                                      WHERE k.credential_id = c.id AND k.node <> \(node) AND k.until > \(at))
                    ORDER BY refresh_at, id LIMIT \(Int64(max(0, limit)))
                ), running AS (
                    SELECT id, refresh_at FROM credentials
                    WHERE id = ANY(\(skipped)) AND refresh_at IS NOT NULL AND refresh_at <= \(at)
                ), claimed AS (
                    INSERT INTO refresh_claims (credential_id, node, until)
                    SELECT id, \(node), \(until)
                    FROM (SELECT id, refresh_at FROM due UNION ALL SELECT id, refresh_at FROM running) wanted
                    ORDER BY refresh_at, id
                    ON CONFLICT (credential_id) DO UPDATE SET node = excluded.node, until = excluded.until
                    WHERE refresh_claims.until <= \(at)
                    RETURNING credential_id
                )
                SELECT id, refresh_at, status FROM due
                WHERE id IN (SELECT credential_id FROM claimed)
                   OR EXISTS (SELECT 1 FROM refresh_claims k
                              WHERE k.credential_id = due.id AND k.node = \(node) AND k.until > \(at))
                ORDER BY refresh_at, id
                """
            ).rows.compactMap { row in
                let (text, refreshAt, status) = try row.decode((String, Int64, String).self)
                guard let id = try? CredentialID(text), let status = CredentialStatus(rawValue: status) else {
                    return nil
                }
                return ScheduledCredential(id: id, refreshAt: Timestamp(milliseconds: refreshAt), status: status)
            }
        }
    }

    public func earliestRefreshAt() async throws -> Timestamp? {
        try await withReader { reader in
            try await reader.query("SELECT min(refresh_at) FROM credentials WHERE refresh_at IS NOT NULL").rows.first
                .flatMap { try $0.decode(Int64?.self) }.map(Timestamp.init(milliseconds:))
        }
    }

    public func openAttempts(limit: Int) async throws -> [RefreshAttempt] {
        try await withReader { reader in
            try await reader.query(
                """
                SELECT \(unescaped: PostgresCredentialWriter.attemptColumns) FROM refresh_attempts WHERE state = 'open'
                ORDER BY started_at LIMIT \(Int64(max(0, limit)))
                """
            ).rows.compactMap(PostgresCredentialWriter.attempt)
        }
    }

    /// Also prunes the change table (kept ten minutes, for nodes that lost their connection) and
    /// claims long over.
    public func pruneFinishedAttempts(before: Timestamp, limit: Int) async throws -> Int {
        let writer = await writers.take()
        defer { writers.giveBack(writer) }
        try await Self.pruneChanges(olderThan: 600, on: writer)
        // By the database's clock, which wrote `stored_at` (a node's clock ahead must not prune
        // keys the others still need).
        try await writer.query(
            """
            DELETE FROM received_answers
            WHERE stored_at < \(unescaped: PostgresDatabase.clockMilliseconds)
                              - \(Int64(SQLiteDatabase.receivedAnswerRetention * 1000))
            """)
        try await writer.query(
            "DELETE FROM refresh_claims WHERE until < \(clock.now.adding(seconds: -600).milliseconds)")
        return try await writer.query(
            """
            DELETE FROM refresh_attempts WHERE attempt_id IN (
                SELECT attempt_id FROM refresh_attempts WHERE finished_at IS NOT NULL AND finished_at < \(before.milliseconds)
                LIMIT \(Int64(max(0, limit))))
            """
        ).metadata.rows ?? 0
    }
}

/// A credential row from PostgreSQL, read by column name.
struct PostgresCredentialRow: CredentialRow {
    let row: PostgresRandomAccessRow

    init(_ row: PostgresRow) { self.row = row.makeRandomAccess() }

    func text(_ column: CredentialColumn) -> String? { try? row[column.name].decode(String?.self) }
    func integer(_ column: CredentialColumn) -> Int64? { try? row[column.name].decode(Int64?.self) }
    func blob(_ column: CredentialColumn) -> [UInt8]? {
        guard row.contains(column.name) else { return nil }
        return (try? row[column.name].decode(ByteBuffer?.self))?.map { Array($0.readableBytesView) }
    }
    /// The two flags' columns have PostgreSQL's own names for `… IS NOT NULL`.
    var hasRefreshToken: Bool { (try? row[CredentialColumn.hasRefreshTokenColumn].decode(Bool.self)) ?? false }
    var hasIDToken: Bool { (try? row[CredentialColumn.hasIDTokenColumn].decode(Bool.self)) ?? false }
}

extension PostgresLink {
    /// One credential row by id: the one statement that reads it, for readers and writers alike,
    /// prepared (every refresh reads its row first).
    func credentialRecord(_ id: CredentialID) async throws -> SealedCredentialRecord? {
        try await execute(RecordByID(id: id.description)).first.map {
            try PostgresCredentialRow($0).record(knownID: id)
        }
    }
}
