import TokenVaultCore

/// The audit trail's rows and the chains' ends, as SQL. The MACs come from the ledger (Storage
/// holds no key); rows are inserted with the ids and positions the ledger chained them under.
extension SQLiteDatabase {
    static let auditColumns =
        "id, at, actor_uid, actor_gid, actor_pid, operation, credential_id, outcome, detail, count, last_at, mac, "
        + "chain, position"
    static let chainEndColumns = "chain, name, row_id, position, mac, seal"

    public func auditEvents(_ query: AuditQuery) async throws -> [StoredAuditEvent] {
        try await threads.run { [self] in
            try withReader { connection in
                let statement = try connection.statement(
                    Self.auditSQL(query.order, oneCredential: query.credentialID != nil))
                try statement.bind(query.sqlCursor, query.credentialID?.description, max(0, query.limit))
                return try Self.auditRows(from: statement)
            }
        }
    }

    /// One text per order and filter (`?1` the cursor, `?2` the credential, `?3` the limit), so
    /// SQLite plans each with its index: `?2 IS NULL OR credential_id = ?2` would walk the whole
    /// trail for one credential's rows.
    static func auditSQL(_ order: AuditQuery.Order, oneCredential: Bool) -> String {
        let filter = oneCredential ? "credential_id = ?2 AND " : ""
        return "SELECT \(auditColumns) FROM audit_events "
            + "WHERE \(filter)id \(order.sqlComparison) ?1 ORDER BY id\(order.sqlDirection) LIMIT ?3"
    }

    public func auditChainEnds() async throws -> [AuditChainEnd] {
        try await threads.run { [self] in
            try withReader { connection in
                let statement = try connection.statement(
                    "SELECT \(Self.chainEndColumns) FROM audit_chain ORDER BY chain, name")
                var ends: [AuditChainEnd] = []
                while try statement.step() {
                    if let end = Self.chainEnd(from: statement) { ends.append(end) }
                }
                return ends
            }
        }
    }

    static func auditRows(from statement: SQLiteStatement) throws -> [StoredAuditEvent] {
        var rows: [StoredAuditEvent] = []
        while try statement.step() {
            rows.append(
                StoredAuditEvent(
                    id: statement.int64(0),
                    event: AuditEvent(
                        at: Timestamp(milliseconds: statement.int64(1)),
                        uid: statement.optionalInt64(2).map { UInt32(truncatingIfNeeded: $0) },
                        gid: statement.optionalInt64(3).map { UInt32(truncatingIfNeeded: $0) },
                        pid: statement.optionalInt64(4).map { Int32(truncatingIfNeeded: $0) },
                        operation: AuditOperation(stored: statement.text(5) ?? ""),
                        credentialID: statement.text(6).flatMap { try? CredentialID($0) },
                        outcome: AuditEvent.Outcome(rawValue: statement.text(7) ?? "") ?? .failed,
                        detail: statement.text(8), count: Int(statement.int64(9)),
                        lastAt: statement.optionalInt64(10).map(Timestamp.init(milliseconds:))),
                    mac: statement.blob(11)))
            rows[rows.count - 1].chain = statement.text(12) ?? ""
            rows[rows.count - 1].position = statement.int64(13)
        }
        return rows
    }

    static func chainEnd(from row: SQLiteStatement) -> AuditChainEnd? {
        guard let name = AuditChainEnd.Name(rawValue: row.text(1) ?? "") else { return nil }
        return AuditChainEnd(
            chain: row.text(0) ?? "", name: name, rowID: row.int64(2), position: row.int64(3), mac: row.blob(4) ?? [],
            seal: row.blob(5) ?? [])
    }
}

/// Audit writes inside a write transaction. One process writes a SQLite vault at a time, so a
/// chain needs no turn of its own and ids are simply the next ones.
extension SQLiteCredentialWriter {
    func lockAuditChain(_ chain: String) async throws {}

    func lastAuditRow(in chain: String) async throws -> (position: Int64, mac: [UInt8]?)? {
        let statement = try connection.statement(
            "SELECT position, mac FROM audit_events WHERE chain = ?1 ORDER BY position DESC LIMIT 1")
        try statement.bind(chain)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return (statement.int64(0), statement.blob(1))
    }

    /// After the largest id ever given (AUTOINCREMENT's counter: rows cut from the end leave
    /// their ids unused).
    func newAuditIDs(_ count: Int) async throws -> [Int64] {
        let statement = try connection.statement(
            """
            SELECT max(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'audit_events'), 0),
                       COALESCE((SELECT max(id) FROM audit_events), 0))
            """)
        defer { statement.reset() }
        _ = try statement.step()
        let last = statement.int64(0)
        return (0..<Int64(count)).map { last + 1 + $0 }
    }

    func auditRows(after: Int64, limit: Int) async throws -> [StoredAuditEvent] {
        let statement = try connection.statement(
            "SELECT \(SQLiteDatabase.auditColumns) FROM audit_events WHERE id > ?1 ORDER BY id LIMIT ?2")
        try statement.bind(after, max(0, limit))
        return try SQLiteDatabase.auditRows(from: statement)
    }

    func deleteAudits(_ ids: [Int64]) async throws -> Int {
        let statement = try connection.statement("DELETE FROM audit_events WHERE id = ?1")
        var deleted = 0
        for id in ids {
            statement.reset()
            try statement.bind(id).run()
            deleted += connection.changes
        }
        return deleted
    }

    func auditRowCount() async throws -> Int {
        let statement = try connection.statement("SELECT count(*) FROM audit_events")
        defer { statement.reset() }
        _ = try statement.step()
        return Int(statement.int64(0))
    }

    func auditChainEnd(_ name: AuditChainEnd.Name, of chain: String) async throws -> AuditChainEnd? {
        let statement = try connection.statement(
            "SELECT \(SQLiteDatabase.chainEndColumns) FROM audit_chain WHERE chain = ?1 AND name = ?2")
        try statement.bind(chain, name.rawValue)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return SQLiteDatabase.chainEnd(from: statement)
    }

    func setAuditChainEnd(_ end: AuditChainEnd) async throws {
        try connection.statement(
            """
            INSERT INTO audit_chain (\(SQLiteDatabase.chainEndColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            ON CONFLICT (chain, name) DO UPDATE
            SET row_id = excluded.row_id, position = excluded.position, mac = excluded.mac, seal = excluded.seal
            WHERE audit_chain.position < excluded.position
            """
        ).bind(end.chain, end.name.rawValue, end.rowID, end.position, end.mac, end.seal).run()
    }

    /// Rows per INSERT statement of a batch: one statement step, and one update of the
    /// AUTOINCREMENT counter, per this many rows (about half the CPU of one INSERT per row).
    static let auditRowsPerStatement = 64
    private static let auditValuesPerRow = 14

    func insertAudits(_ rows: [StoredAuditEvent]) async throws {
        var start = 0
        while start < rows.count {
            let count = min(Self.auditRowsPerStatement, rows.count - start)
            // Two shapes only (full chunks, single rows), so the statement cache stays small.
            let chunk = count == Self.auditRowsPerStatement ? count : 1
            let statement = try connection.statement(Self.auditInsert(rows: chunk))
            for (offset, row) in rows[start..<(start + chunk)].enumerated() {
                let base = Int32(offset * Self.auditValuesPerRow)
                let event = row.event
                try statement.bind(at: base + 1, row.id)
                try statement.bind(at: base + 2, event.at.milliseconds)
                try statement.bind(at: base + 3, event.uid.map(Int64.init))
                try statement.bind(at: base + 4, event.gid.map(Int64.init))
                try statement.bind(at: base + 5, event.pid.map(Int64.init))
                try statement.bind(at: base + 6, event.operation)
                try statement.bind(at: base + 7, event.credentialID?.description)
                try statement.bind(at: base + 8, event.outcome.rawValue)
                try statement.bind(at: base + 9, event.detail)
                try statement.bind(at: base + 10, Int64(event.count))
                try statement.bind(at: base + 11, event.lastAt?.milliseconds)
                try statement.bind(at: base + 12, row.mac)
                try statement.bind(at: base + 13, row.chain)
                try statement.bind(at: base + 14, row.position)
            }
            try statement.run()
            start += chunk
        }
    }

    private static let auditInsertSingle = auditInsertSQL(rows: 1)
    private static let auditInsertChunk = auditInsertSQL(rows: auditRowsPerStatement)

    private static func auditInsert(rows: Int) -> String {
        rows == 1 ? auditInsertSingle : auditInsertChunk
    }

    private static func auditInsertSQL(rows: Int) -> String {
        "INSERT INTO audit_events (\(SQLiteDatabase.auditColumns)) VALUES "
            + (0..<rows).map { row in
                "(" + (1...auditValuesPerRow).map { "?\(row * auditValuesPerRow + $0)" }.joined(separator: ", ") + ")"
            }.joined(separator: ", ")
    }
}
