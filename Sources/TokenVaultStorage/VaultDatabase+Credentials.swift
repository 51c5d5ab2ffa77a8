import Foundation
import TokenVaultCore

extension VaultDatabase: CredentialStore {
    static let metadataColumns = CredentialColumn.metadataSelectList
    static let recordColumns = CredentialColumn.recordSelectList

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
            // A set of namespaces is bound as one JSON array: one statement shape for any number.
            let namespaces = query.namespaces.map { CompactJSONColumn.encode(strings: $0.sorted()) }
            let statement = try connection.statement(
                """
                SELECT \(Self.metadataColumns) FROM credentials
                WHERE (?1 IS NULL OR namespace = ?1) AND (?2 IS NULL OR status = ?2) AND (?3 IS NULL OR id > ?3)
                  AND (?5 IS NULL OR namespace IN (SELECT value FROM json_each(?5)))
                ORDER BY id LIMIT ?4
                """)
            try statement.bind(
                query.namespace, query.status?.rawValue, query.after?.description, max(0, query.limit), namespaces)
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
                    sealTerm: UInt32(truncatingIfNeeded: statement.int64(.sealTerm)),
                    accessToken: statement.blob(.accessToken) ?? [], refreshToken: statement.blob(.refreshToken),
                    idToken: statement.blob(.idToken), extras: statement.blob(.extras)))
        }
        return result
    }

    static func metadata(from row: SQLiteStatement, knownID: CredentialID? = nil) throws -> CredentialMetadata {
        func timestamp(_ column: CredentialColumn) -> Timestamp? {
            row.optionalInt64(column).map(Timestamp.init(milliseconds:))
        }
        let idText = knownID == nil ? row.text(.id) ?? "" : ""
        guard let id = knownID ?? (try? CredentialID(idText)),
            let kind = CredentialKind(rawValue: row.text(.kind) ?? ""),
            let status = CredentialStatus(rawValue: row.text(.status) ?? "")
        else { throw VaultError.storage("credential row '\(idText)' has an unreadable id, kind or status") }
        var failure: CredentialFailure?
        if let code = row.text(.lastErrorCode) {
            failure = CredentialFailure(
                code: code, message: row.text(.lastErrorMessage) ?? "",
                at: timestamp(.lastErrorAt) ?? Timestamp(milliseconds: 0))
        }
        return CredentialMetadata(
            id: id, provider: row.text(.provider) ?? "", kind: kind, subject: row.text(.subject), status: status,
            generation: row.int64(.generation), tokenType: row.text(.tokenType),
            scopes: CompactJSONColumn.strings(row.text(.scopes)), labels: CompactJSONColumn.labels(row.text(.labels)),
            issuedAt: timestamp(.issuedAt) ?? Timestamp(milliseconds: 0), expiresAt: timestamp(.expiresAt),
            refreshAt: timestamp(.refreshAt), refreshTokenExpiresAt: timestamp(.refreshTokenExpiresAt),
            lastError: failure, refreshFailures: Int(row.int64(.refreshFailures)),
            createdAt: timestamp(.createdAt) ?? Timestamp(milliseconds: 0),
            updatedAt: timestamp(.updatedAt) ?? Timestamp(milliseconds: 0),
            hasRefreshToken: row.int64(CredentialColumn.hasRefreshTokenIndex) != 0,
            hasIDToken: row.int64(CredentialColumn.hasIDTokenIndex) != 0)
    }
}

/// Writes inside one transaction on the writer connection.
struct SQLiteCredentialWriter: CredentialWriter {
    let connection: SQLiteConnection
    /// The active term, read once per transaction (a writer lives for one): nothing inside a
    /// credential transaction changes `key_terms`, and a group commit seals hundreds of rows.
    private let term = ActiveTermOfTransaction()

    init(connection: SQLiteConnection) { self.connection = connection }

    func record(_ id: CredentialID) throws -> SealedCredentialRecord? {
        try VaultDatabase.record(id, on: connection)
    }

    func activeTerm() throws -> UInt32 {
        if let known = term.value { return known }
        guard let read = try connection.statement("SELECT term FROM key_terms WHERE state = 'active'").firstInt64()
        else { throw VaultError.storage("this vault has no active data key term") }
        term.value = UInt32(truncatingIfNeeded: read)
        return UInt32(truncatingIfNeeded: read)
    }

    private static let upsert = """
        INSERT INTO credentials (\(CredentialColumn.insertList)) VALUES (\(CredentialColumn.insertPlaceholders))
        ON CONFLICT (id) DO UPDATE SET \(CredentialColumn.updateList)
        """

    func save(_ record: SealedCredentialRecord) throws {
        let metadata = record.metadata
        let scopes = CompactJSONColumn.encode(strings: metadata.scopes)
        let labels = CompactJSONColumn.encode(labels: metadata.labels)
        let statement = try connection.statement(Self.upsert)
        for column in CredentialColumn.allCases {
            let value: (any SQLiteBindable)? =
                switch column {
                case .id: metadata.id.description
                case .namespace: metadata.id.namespace
                case .name: metadata.id.name
                case .provider: metadata.provider
                case .kind: metadata.kind.rawValue
                case .subject: metadata.subject
                case .status: metadata.status.rawValue
                case .generation: metadata.generation
                case .tokenType: metadata.tokenType
                case .scopes: scopes
                case .labels: labels
                case .issuedAt: metadata.issuedAt.milliseconds
                case .expiresAt: metadata.expiresAt?.milliseconds
                case .refreshAt: metadata.refreshAt?.milliseconds
                case .refreshTokenExpiresAt: metadata.refreshTokenExpiresAt?.milliseconds
                case .lastErrorCode: metadata.lastError?.code
                case .lastErrorMessage: metadata.lastError?.message
                case .lastErrorAt: metadata.lastError?.at.milliseconds
                case .createdAt: metadata.createdAt.milliseconds
                case .updatedAt: metadata.updatedAt.milliseconds
                case .refreshFailures: metadata.refreshFailures
                case .sealTerm: record.sealTerm
                case .accessToken: record.accessToken
                case .refreshToken: record.refreshToken
                case .idToken: record.idToken
                case .extras: record.extras
                }
            try statement.bind(at: column.rawValue + 1, value)
        }
        try statement.run()
    }

    func delete(_ id: CredentialID) throws -> Bool {
        try connection.statement("DELETE FROM credentials WHERE id = ?1").bind(id.description).run()
        return connection.changes > 0
    }
}

/// `SQLiteCredentialWriter.activeTerm`'s memo for one transaction.
private final class ActiveTermOfTransaction {
    var value: UInt32?
}
