import TokenVaultCore

/// The audit trail's rows and the chain's ends, as SQL. The MACs come from the ledger (Storage
/// holds no key); rows are inserted with the ids the ledger chained them under.
extension VaultDatabase {
    static let auditColumns =
        "id, at, actor_uid, actor_gid, actor_pid, operation, credential_id, outcome, detail, count, last_at, mac"

    public func auditEvents(after: Int64?, credentialID: CredentialID?, limit: Int) throws -> [StoredAuditEvent] {
        try withReader { connection in
            let statement = try connection.statement(
                """
                SELECT \(Self.auditColumns) FROM audit_events
                WHERE id > ?1 AND (?2 IS NULL OR credential_id = ?2) ORDER BY id LIMIT ?3
                """)
            try statement.bind(after ?? 0, credentialID?.description, max(0, limit))
            return try Self.auditRows(from: statement)
        }
    }

    public func auditChainEnds() throws -> [AuditChainEnd] {
        try withReader { connection in
            let statement = try connection.statement("SELECT name, row_id, mac, seal FROM audit_chain ORDER BY name")
            var ends: [AuditChainEnd] = []
            while try statement.step() {
                if let end = Self.chainEnd(from: statement) { ends.append(end) }
            }
            return ends
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
                        operation: statement.text(5) ?? "",
                        credentialID: statement.text(6).flatMap { try? CredentialID($0) },
                        outcome: AuditEvent.Outcome(rawValue: statement.text(7) ?? "") ?? .failed,
                        detail: statement.text(8), count: Int(statement.int64(9)),
                        lastAt: statement.optionalInt64(10).map(Timestamp.init(milliseconds:))),
                    mac: statement.blob(11)))
        }
        return rows
    }

    static func chainEnd(from row: SQLiteStatement) -> AuditChainEnd? {
        guard let name = AuditChainEnd.Name(rawValue: row.text(0) ?? "") else { return nil }
        return AuditChainEnd(name: name, rowID: row.int64(1), mac: row.blob(2) ?? [], seal: row.blob(3) ?? [])
    }
}

/// Audit writes inside a write transaction.
extension SQLiteCredentialWriter {
    func lastAuditRow() throws -> (id: Int64, mac: [UInt8]?)? {
        let statement = try connection.statement("SELECT id, mac FROM audit_events ORDER BY id DESC LIMIT 1")
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return (statement.int64(0), statement.blob(1))
    }

    func auditRow(_ id: Int64) throws -> StoredAuditEvent? {
        let statement = try connection.statement(
            "SELECT \(VaultDatabase.auditColumns) FROM audit_events WHERE id = ?1")
        try statement.bind(id)
        defer { statement.reset() }
        return try VaultDatabase.auditRows(from: statement).first
    }

    func auditRows(after: Int64, limit: Int) throws -> [StoredAuditEvent] {
        let statement = try connection.statement(
            "SELECT \(VaultDatabase.auditColumns) FROM audit_events WHERE id > ?1 ORDER BY id LIMIT ?2")
        try statement.bind(after, max(0, limit))
        return try VaultDatabase.auditRows(from: statement)
    }

    func deleteAudits(through id: Int64) throws -> Int {
        try connection.statement("DELETE FROM audit_events WHERE id <= ?1").bind(id).run()
        return connection.changes
    }

    func auditRowSpan() throws -> (first: Int64, last: Int64)? {
        let statement = try connection.statement("SELECT min(id), max(id) FROM audit_events")
        defer { statement.reset() }
        guard try statement.step(), let first = statement.optionalInt64(0), let last = statement.optionalInt64(1)
        else { return nil }
        return (first, last)
    }

    func auditChainEnd(_ name: AuditChainEnd.Name) throws -> AuditChainEnd? {
        let statement = try connection.statement("SELECT name, row_id, mac, seal FROM audit_chain WHERE name = ?1")
        try statement.bind(name.rawValue)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return VaultDatabase.chainEnd(from: statement)
    }

    func setAuditChainEnd(_ end: AuditChainEnd) throws {
        try connection.statement(
            """
            INSERT INTO audit_chain (name, row_id, mac, seal) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (name) DO UPDATE SET row_id = excluded.row_id, mac = excluded.mac, seal = excluded.seal
            """
        ).bind(end.name.rawValue, end.rowID, end.mac, end.seal).run()
    }

    /// Rows per INSERT statement of a batch: one statement step, and one update of the
    /// AUTOINCREMENT counter, per this many rows (about half the CPU of one INSERT per row).
    static let auditRowsPerStatement = 64
    private static let auditValuesPerRow = 12

    func insertAudits(_ rows: [StoredAuditEvent]) throws {
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
        "INSERT INTO audit_events (\(VaultDatabase.auditColumns)) VALUES "
            + (0..<rows).map { row in
                "(" + (1...auditValuesPerRow).map { "?\(row * auditValuesPerRow + $0)" }.joined(separator: ", ") + ")"
            }.joined(separator: ", ")
    }
}
