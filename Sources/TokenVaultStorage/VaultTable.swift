import TokenVaultCore

/// The tables a vault is made of, with the same names and columns on both backends
/// (`migrations/` and `migrations/postgres/`), in the order a copy writes them: a row's parents
/// before it. Each backend's own bookkeeping (`schema_migrations`, PostgreSQL's change feed) is
/// not part of the vault.
enum VaultTable: String, CaseIterable, Sendable {
    case settings = "vault_meta"
    case keyTerms = "key_terms"
    case credentials
    case refreshAttempts = "refresh_attempts"
    case auditEvents = "audit_events"
    case auditChain = "audit_chain"

    /// The columns rows are read in order of, a page at a time.
    var primaryKey: [String] {
        switch self {
        case .settings: ["key"]
        case .keyTerms: ["term"]
        case .credentials: ["id"]
        case .refreshAttempts: ["attempt_id"]
        case .auditEvents: ["id"]
        case .auditChain: ["chain", "name"]
        }
    }

    /// `WHERE (a, b) > (?, ?) ORDER BY a, b`: the page after `after`'s key, with its parameters
    /// numbered from `firstParameter` in the backend's style (`?2` or `$2`).
    func pageSQL(after: Bool, firstParameter: Int, marker: String) -> String {
        let key = primaryKey.joined(separator: ", ")
        let parameters = primaryKey.indices.map { "\(marker)\(firstParameter + $0)" }.joined(separator: ", ")
        return "SELECT * FROM \(rawValue) " + (after ? "WHERE (\(key)) > (\(parameters)) " : "") + "ORDER BY \(key)"
    }
}

/// A page of one table's rows exactly as stored (sealed fields stay sealed).
struct TableRows {
    var columns: [String]
    var rows: [[ColumnValue]]

    /// The primary key of the last row, where the next page starts.
    func lastKey(of table: VaultTable) -> [ColumnValue]? {
        guard let last = rows.last else { return nil }
        let indices = table.primaryKey.compactMap { columns.firstIndex(of: $0) }
        guard indices.count == table.primaryKey.count else { return nil }
        return indices.map { last[$0] }
    }
}

/// A backend whose vault tables can be read and replaced row for row (`StoreCopy`).
protocol TableStore: Sendable {
    func rowCount(_ table: VaultTable) async throws -> Int
    /// Up to `limit` rows whose primary key follows `after`, in primary-key order.
    func rows(of table: VaultTable, after: [ColumnValue]?, limit: Int) async throws -> TableRows
    /// In one transaction: deletes every row of the vault tables, then lets `fill` insert.
    func replaceAllRows(_ fill: (_ insert: (VaultTable, TableRows) async throws -> Void) async throws -> Void)
        async throws
}
