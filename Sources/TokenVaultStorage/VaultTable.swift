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

    /// The column rows are read in order of, a page at a time.
    var primaryKey: String {
        switch self {
        case .settings: "key"
        case .keyTerms: "term"
        case .credentials: "id"
        case .refreshAttempts: "attempt_id"
        case .auditEvents: "id"
        case .auditChain: "name"
        }
    }
}

/// A page of one table's rows exactly as stored (sealed fields stay sealed).
struct TableRows {
    var columns: [String]
    var rows: [[ColumnValue]]

    /// The primary key of the last row, where the next page starts.
    func lastKey(of table: VaultTable) -> ColumnValue? {
        guard let index = columns.firstIndex(of: table.primaryKey) else { return nil }
        return rows.last?[index]
    }
}

/// A backend whose vault tables can be read and replaced row for row (`StoreCopy`).
protocol TableStore {
    func rowCount(_ table: VaultTable) throws -> Int
    /// Up to `limit` rows whose primary key follows `after`, in primary-key order.
    func rows(of table: VaultTable, after: ColumnValue?, limit: Int) throws -> TableRows
    /// In one transaction: deletes every row of the vault tables, then lets `fill` insert.
    func replaceAllRows(_ fill: (_ insert: (VaultTable, TableRows) throws -> Void) throws -> Void) throws
}
