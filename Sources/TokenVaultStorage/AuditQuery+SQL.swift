import TokenVaultCore

/// How SQL spells an audit page, the same on both backends: the comparison with the cursor, the
/// direction of `ORDER BY id`, and the cursor to use for the first page.
extension AuditQuery {
    /// The query's cursor, or one before every row in its order.
    var sqlCursor: Int64 { cursor ?? (order == .oldestFirst ? 0 : .max) }
}

extension AuditQuery.Order {
    var sqlComparison: String { self == .oldestFirst ? ">" : "<" }
    var sqlDirection: String { self == .oldestFirst ? "" : " DESC" }
}
