import TokenVaultCore

/// The vault tables row for row, for `StoreCopy`.
extension SQLiteDatabase: TableStore {
    func rowCount(_ table: VaultTable) async throws -> Int {
        try await threads.run { [self] in
            try withReader { Int(try $0.statement("SELECT count(*) FROM \(table.rawValue)").firstInt64() ?? 0) }
        }
    }

    func rows(of table: VaultTable, after: [ColumnValue]?, limit: Int) async throws -> TableRows {
        try await threads.run { [self] in
            try withReader { connection in
                let statement = try connection.statement(
                    table.pageSQL(after: after != nil, firstParameter: 2, marker: "?") + " LIMIT ?1")
                try statement.bind(at: 1, Int64(limit))
                for (offset, value) in (after ?? []).enumerated() { try statement.bind(at: Int32(2 + offset), value) }
                var page = TableRows(columns: statement.columnNames, rows: [])
                while try statement.step() {
                    page.rows.append((0..<Int32(page.columns.count)).map(statement.value))
                }
                return page
            }
        }
    }

    func replaceAllRows(_ fill: ((VaultTable, TableRows) async throws -> Void) async throws -> Void) async throws {
        defer { cache.invalidateAll() }
        try await writeTransaction(durability: .full) { connection in
            // Pending sign-ins go too: they are sealed under the replaced vault's key terms.
            try connection.execute("DELETE FROM authorizations")
            for table in VaultTable.allCases.reversed() { try connection.execute("DELETE FROM \(table.rawValue)") }
            try await fill { table, page in
                let placeholders = page.columns.indices.map { "?\($0 + 1)" }.joined(separator: ", ")
                let statement = try connection.statement(
                    "INSERT INTO \(table.rawValue) (\(page.columns.joined(separator: ", "))) VALUES (\(placeholders))")
                for row in page.rows {
                    statement.reset()
                    for (index, value) in row.enumerated() { try statement.bind(at: Int32(index + 1), value) }
                    try statement.run()
                }
            }
        }
    }
}
