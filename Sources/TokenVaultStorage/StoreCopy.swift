import TokenVaultCore

/// Copies a whole vault from one database to another, row for row and still sealed (the key is
/// needed only to check the result, by the caller): `tokenvault migrate-store`. The target is
/// written in one transaction, so a copy that fails leaves it as it was and can simply be run
/// again; a target that already holds a vault is replaced only when asked to.
public enum StoreCopy {
    /// Rows per table, as counted in the source and then in the target.
    public struct Report: Sendable, Equatable {
        public var rows: [String: Int]
    }

    static let pageSize = 500

    /// Copies every vault table of `source` into `target` (both at the current schema).
    public static func copy(from source: any VaultBackend, to target: any VaultBackend, replacing: Bool) async throws
        -> Report
    {
        guard let source = source as? any TableStore, let target = target as? any TableStore else {
            throw VaultError.storage("this backend cannot copy its tables")
        }
        let existing = try await rowCounts(of: target)
        if !replacing, existing.values.contains(where: { $0 > 0 }) {
            let held = VaultTable.allCases.compactMap { table in
                existing[table.rawValue].flatMap { $0 > 0 ? "\($0) \(table.rawValue)" : nil }
            }
            throw VaultError(
                code: .alreadyInitialised,
                message:
                    "the target already holds a vault (\(held.joined(separator: ", "))): pass --force to replace it")
        }
        let expected = try await rowCounts(of: source)
        try await target.replaceAllRows { insert in
            for table in VaultTable.allCases {
                var after: [ColumnValue]?
                while true {
                    let page = try await source.rows(of: table, after: after, limit: pageSize)
                    if page.rows.isEmpty { break }
                    try await insert(table, page)
                    after = page.lastKey(of: table)
                    if page.rows.count < pageSize { break }
                }
            }
        }
        let copied = try await rowCounts(of: target)
        guard copied == expected, try await rowCounts(of: source) == expected else {
            throw VaultError.storage(
                "the row counts differ after the copy (source \(expected), target \(copied)): the source changed "
                    + "while it was copied; stop every daemon using it and run the copy again with --force")
        }
        return Report(rows: copied)
    }

    private static func rowCounts(of store: any TableStore) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for table in VaultTable.allCases { counts[table.rawValue] = try await store.rowCount(table) }
        return counts
    }
}
