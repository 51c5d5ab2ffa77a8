import Foundation
import TokenVaultCore

extension VaultDatabase: CredentialStore {
    static let metadataColumns = """
        id, provider, kind, subject, status, generation, token_type, scopes, labels, issued_at, expires_at, \
        refresh_at, refresh_token_expires_at, last_error_code, last_error_message, last_error_at, created_at, \
        updated_at, refresh_token IS NOT NULL, id_token IS NOT NULL, refresh_failures
        """
    static let recordColumns = metadataColumns + ", seal_term, access_token, refresh_token, id_token, extras"

    public func record(_ id: CredentialID) throws -> SealedCredentialRecord? {
        try withReader { try Self.record(id, on: $0) }
    }

    /// No busy handler for this read: SQLITE_BUSY comes back at once (as a storage error).
    public func recordWithoutWaiting(_ id: CredentialID) throws -> SealedCredentialRecord? {
        try withReader { connection in
            connection.setBusyTimeout(milliseconds: 0)
            defer { connection.setBusyTimeout(milliseconds: SQLiteConnection.defaultBusyTimeoutMilliseconds) }
            return try Self.record(id, on: connection)
        }
    }

    public func list(_ query: CredentialQuery) throws -> [CredentialMetadata] {
        try withReader { connection in
            let statement = try connection.statement(
                """
                SELECT \(Self.metadataColumns) FROM credentials
                WHERE (?1 IS NULL OR namespace = ?1) AND (?2 IS NULL OR status = ?2) AND (?3 IS NULL OR id > ?3)
                ORDER BY id LIMIT ?4
                """)
            try statement.bind(query.namespace, query.status?.rawValue, query.after?.description, max(0, query.limit))
            var result: [CredentialMetadata] = []
            while try statement.step() { result.append(try Self.metadata(from: statement)) }
            return result
        }
    }

    public func records(after: CredentialID?, limit: Int) throws -> [SealedCredentialRecord] {
        try withReader { connection in
            let statement = try connection.statement(
                "SELECT \(Self.recordColumns) FROM credentials WHERE ?1 IS NULL OR id > ?1 ORDER BY id LIMIT ?2")
            try statement.bind(after?.description, limit)
            return try Self.records(from: statement)
        }
    }

    public func records(notSealedWith term: UInt32, limit: Int) throws -> [SealedCredentialRecord] {
        try withReader { connection in
            let statement = try connection.statement(
                "SELECT \(Self.recordColumns) FROM credentials WHERE seal_term <> ?1 ORDER BY seal_term LIMIT ?2")
            try statement.bind(term, limit)
            return try Self.records(from: statement)
        }
    }

    public func write<Result>(durability: Durability, _ body: (any CredentialWriter) throws -> Result) throws -> Result
    {
        try writeTransaction(durability: durability) { connection in
            try body(SQLiteCredentialWriter(connection: connection))
        }
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
        while try statement.step() {
            result.append(
                SealedCredentialRecord(
                    metadata: try metadata(from: statement, knownID: knownID),
                    sealTerm: UInt32(truncatingIfNeeded: statement.int64(21)),
                    accessToken: statement.blob(22) ?? [], refreshToken: statement.blob(23),
                    idToken: statement.blob(24), extras: statement.blob(25)))
        }
        return result
    }

    static func metadata(from row: SQLiteStatement, knownID: CredentialID? = nil) throws -> CredentialMetadata {
        func timestamp(_ column: Int32) -> Timestamp? { row.optionalInt64(column).map(Timestamp.init(milliseconds:)) }
        let idText = knownID == nil ? row.text(0) ?? "" : ""
        guard let id = knownID ?? (try? CredentialID(idText)),
            let kind = CredentialKind(rawValue: row.text(2) ?? ""),
            let status = CredentialStatus(rawValue: row.text(4) ?? "")
        else { throw VaultError.storage("credential row '\(idText)' has an unreadable id, kind or status") }
        let scopes = CompactJSONColumn.strings(row.text(7))
        let labels = CompactJSONColumn.labels(row.text(8))
        var failure: CredentialFailure?
        if let code = row.text(13) {
            failure = CredentialFailure(
                code: code, message: row.text(14) ?? "", at: timestamp(15) ?? Timestamp(milliseconds: 0))
        }
        return CredentialMetadata(
            id: id, provider: row.text(1) ?? "", kind: kind, subject: row.text(3), status: status,
            generation: row.int64(5), tokenType: row.text(6), scopes: scopes, labels: labels,
            issuedAt: timestamp(9) ?? Timestamp(milliseconds: 0), expiresAt: timestamp(10), refreshAt: timestamp(11),
            refreshTokenExpiresAt: timestamp(12), lastError: failure, refreshFailures: Int(row.int64(20)),
            createdAt: timestamp(16) ?? Timestamp(milliseconds: 0),
            updatedAt: timestamp(17) ?? Timestamp(milliseconds: 0),
            hasRefreshToken: row.int64(18) != 0, hasIDToken: row.int64(19) != 0)
    }
}

/// Writes inside one transaction on the writer connection.
struct SQLiteCredentialWriter: CredentialWriter {
    let connection: SQLiteConnection

    func record(_ id: CredentialID) throws -> SealedCredentialRecord? {
        try VaultDatabase.record(id, on: connection)
    }

    func save(_ record: SealedCredentialRecord) throws {
        let metadata = record.metadata
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let scopes = String(decoding: try encoder.encode(metadata.scopes), as: UTF8.self)
        let labels = String(decoding: try encoder.encode(metadata.labels), as: UTF8.self)
        let statement = try connection.statement(
            """
            INSERT INTO credentials (
                id, namespace, name, provider, kind, subject, status, generation, token_type, scopes, labels,
                issued_at, expires_at, refresh_at, refresh_token_expires_at, last_error_code, last_error_message,
                last_error_at, created_at, updated_at, seal_term, access_token, refresh_token, id_token, extras,
                refresh_failures)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21,
                    ?22, ?23, ?24, ?25, ?26)
            ON CONFLICT (id) DO UPDATE SET
                provider = excluded.provider, kind = excluded.kind, subject = excluded.subject,
                status = excluded.status, generation = excluded.generation, token_type = excluded.token_type,
                scopes = excluded.scopes, labels = excluded.labels, issued_at = excluded.issued_at,
                expires_at = excluded.expires_at, refresh_at = excluded.refresh_at,
                refresh_token_expires_at = excluded.refresh_token_expires_at,
                last_error_code = excluded.last_error_code, last_error_message = excluded.last_error_message,
                last_error_at = excluded.last_error_at, updated_at = excluded.updated_at,
                seal_term = excluded.seal_term, access_token = excluded.access_token,
                refresh_token = excluded.refresh_token, id_token = excluded.id_token, extras = excluded.extras,
                refresh_failures = excluded.refresh_failures
            """)
        try statement.bind(
            metadata.id.description, metadata.id.namespace, metadata.id.name, metadata.provider,
            metadata.kind.rawValue, metadata.subject, metadata.status.rawValue, metadata.generation,
            metadata.tokenType, scopes, labels, metadata.issuedAt.milliseconds, metadata.expiresAt?.milliseconds,
            metadata.refreshAt?.milliseconds, metadata.refreshTokenExpiresAt?.milliseconds, metadata.lastError?.code,
            metadata.lastError?.message, metadata.lastError?.at.milliseconds, metadata.createdAt.milliseconds,
            metadata.updatedAt.milliseconds, record.sealTerm, record.accessToken, record.refreshToken,
            record.idToken, record.extras, metadata.refreshFailures)
        try statement.run()
    }

    func delete(_ id: CredentialID) throws -> Bool {
        try connection.statement("DELETE FROM credentials WHERE id = ?1").bind(id.description).run()
        return connection.changes > 0
    }

    func appendAudit(_ event: AuditEvent) throws {
        try appendAudits([event])
    }

    /// Rows per INSERT statement of a batch: one statement step, and one update of the
    /// AUTOINCREMENT counter, per this many rows (about half the CPU of one INSERT per row).
    static let auditRowsPerStatement = 64

    func appendAudits(_ events: [AuditEvent]) throws {
        var start = 0
        while start < events.count {
            let count = min(Self.auditRowsPerStatement, events.count - start)
            // Two shapes only (full chunks, single rows), so the statement cache stays small.
            let rows = count == Self.auditRowsPerStatement ? count : 1
            let statement = try connection.statement(Self.auditInsert(rows: rows))
            for (row, event) in events[start..<(start + rows)].enumerated() {
                let base = Int32(row * 8)
                try statement.bind(at: base + 1, event.at.milliseconds)
                try statement.bind(at: base + 2, event.uid.map(Int64.init))
                try statement.bind(at: base + 3, event.gid.map(Int64.init))
                try statement.bind(at: base + 4, event.pid.map(Int64.init))
                try statement.bind(at: base + 5, event.operation)
                try statement.bind(at: base + 6, event.credentialID?.description)
                try statement.bind(at: base + 7, event.outcome.rawValue)
                try statement.bind(at: base + 8, event.detail)
            }
            try statement.run()
            start += rows
        }
    }

    private static let auditInsertSingle = auditInsertSQL(rows: 1)
    private static let auditInsertChunk = auditInsertSQL(rows: auditRowsPerStatement)

    private static func auditInsert(rows: Int) -> String {
        rows == 1 ? auditInsertSingle : auditInsertChunk
    }

    private static func auditInsertSQL(rows: Int) -> String {
        "INSERT INTO audit_events (at, actor_uid, actor_gid, actor_pid, operation, credential_id, outcome, detail) VALUES "
            + (0..<rows).map { row in "(" + (1...8).map { "?\(row * 8 + $0)" }.joined(separator: ", ") + ")" }
            .joined(separator: ", ")
    }
}
