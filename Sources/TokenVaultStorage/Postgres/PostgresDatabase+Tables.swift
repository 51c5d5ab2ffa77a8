import NIOCore
import PostgresNIO
import TokenVaultCore

/// The vault tables row for row, for `StoreCopy`.
extension PostgresDatabase: TableStore {
    func rowCount(_ table: VaultTable) async throws -> Int {
        try await withReader { reader in
            Int(
                try await reader.query(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table.rawValue)")).rows.first?
                    .decode(Int64.self) ?? 0)
        }
    }

    func rows(of table: VaultTable, after: [ColumnValue]?, limit: Int) async throws -> TableRows {
        var binds = PostgresBindings()
        binds.append(Int64(limit))
        for value in after ?? [] { PostgresCredentialWriter.append(value, to: &binds) }
        let result = try await withReader { reader in
            try await reader.query(
                PostgresQuery(
                    unsafeSQL: table.pageSQL(after: after != nil, firstParameter: 2, marker: "$") + " LIMIT $1",
                    binds: binds))
        }
        var page = TableRows(columns: result.rows.first.map { $0.map(\.columnName) } ?? [], rows: [])
        for row in result.rows {
            page.rows.append(try row.map(Self.value))
        }
        return page
    }

    /// In one transaction on the administration link. The old rows go with one TRUNCATE (a DELETE would run
    /// the change trigger for each of perhaps millions of rows; a copy runs with every daemon
    /// stopped, so nobody listens); the inserts run it, so nodes started later replay them.
    func replaceAllRows(_ fill: ((VaultTable, TableRows) async throws -> Void) async throws -> Void) async throws {
        // Also when the commit fails or its outcome is unknown, as SQLite's does.
        defer { cache.invalidateAll() }
        let writer = await administration.take()
        defer { administration.giveBack(writer) }
        try await writer.transaction {
            // Pending sign-ins go too: they are sealed under the replaced vault's key terms.
            let tables = (["authorizations"] + VaultTable.allCases.map(\.rawValue)).joined(separator: ", ")
            try await writer.query(PostgresQuery(unsafeSQL: "TRUNCATE \(tables)"))
            try await fill { table, page in
                let columns = page.columns.joined(separator: ", ")
                // At most 65,535 parameters to a statement.
                let rowsPerStatement = max(1, 30_000 / max(1, page.columns.count))
                var start = 0
                while start < page.rows.count {
                    let slice = page.rows[start..<min(page.rows.count, start + rowsPerStatement)]
                    var binds = PostgresBindings()
                    var tuples: [String] = []
                    for row in slice {
                        let first = binds.count + 1
                        tuples.append("(" + row.indices.map { "$\(first + $0)" }.joined(separator: ", ") + ")")
                        for value in row { PostgresCredentialWriter.append(value, to: &binds) }
                    }
                    try await writer.query(
                        PostgresQuery(
                            unsafeSQL:
                                "INSERT INTO \(table.rawValue) (\(columns)) VALUES \(tuples.joined(separator: ", "))",
                            binds: binds))
                    start += slice.count
                }
            }
            // Audit ids come from a sequence; the copied rows' must not be given out again.
            try await writer.query(
                """
                SELECT setval('audit_event_ids',
                    GREATEST((SELECT max(id) FROM audit_events), (SELECT max(row_id) FROM audit_chain), 0) + 1, false)
                """)
        }
    }

    /// A cell as stored, by its PostgreSQL type (the vault tables use BIGINT, TEXT and BYTEA).
    static func value(_ cell: PostgresCell) throws -> ColumnValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int8, .int4, .int2: return .integer(try cell.decode(Int64.self))
        case .text, .varchar, .name: return .text(try cell.decode(String.self))
        case .bytea: return .blob(Array(buffer: try cell.decode(ByteBuffer.self)))
        default:
            throw VaultError.storage(
                "column \(cell.columnName) has PostgreSQL type \(cell.dataType), which a vault table does not use")
        }
    }
}
