import Foundation
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultStorage

/// A page of credentials on SQLite: every combination of filters returns what filtering every
/// row would, and none reads the table from its first row (a cursor seeks, a namespace reads
/// through its index), so the last page of a million credentials costs what the first does.
@Suite struct ListingQueryTests {
    @Test func everyCombinationOfFiltersReturnsWhatFilteringEveryRowWould() async throws {
        let fixture = try TestVault()
        let payload = try SamplePayloads.decode(SamplePayloads.tinkoff().json)
        var ids: [CredentialID] = []
        for namespace in ["alpha", "beta", "gamma"] {
            for index in 0..<7 { ids.append(try CredentialID(namespace: namespace, name: "c\(index)")) }
        }
        var failing: Set<CredentialID> = []
        for id in ids.shuffled() {
            let metadata = try await fixture.vault.put(id, payload: payload, provider: "p")
            if Bool.random() {
                var update = ScheduleUpdate(metadata)
                update.status = .failing
                _ = try await fixture.vault.updateSchedule(update)
                failing.insert(id)
            }
        }
        let sorted = ids.sorted { $0.description < $1.description }
        // Past `namespacesReadApart`, a caller's namespaces are read in one statement.
        let many = Set((0...SQLiteDatabase.namespacesReadApart).map { "other\($0)" })
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<400 {
            var query = CredentialQuery(limit: Int.random(in: 1...25, using: &generator))
            if Bool.random(using: &generator) { query.namespace = ["alpha", "beta", "gamma", "none"].randomElement() }
            if Bool.random(using: &generator) { query.status = [.active, .failing].randomElement() }
            if Bool.random(using: &generator) { query.after = sorted.randomElement() }
            if Bool.random(using: &generator) {
                query.namespaces = Set(["alpha", "beta", "gamma"].filter { _ in Bool.random(using: &generator) })
                if Bool.random(using: &generator) { query.namespaces?.formUnion(many) }
            }
            let expected = sorted.filter { id in
                (query.namespace.map { id.namespace == $0 } ?? true)
                    && (query.status.map { $0 == (failing.contains(id) ? .failing : .active) } ?? true)
                    && (query.after.map { id.description > $0.description } ?? true)
                    && (query.namespaces.map { $0.contains(id.namespace) } ?? true)
            }.prefix(query.limit)
            let listed = try await fixture.database.list(query)
            #expect(listed.map(\.id) == Array(expected), "\(query)")
        }
    }

    /// A shape with a namespace or a cursor reads an index range in id order: no scan of the
    /// table, and no sort of everything it read (the caller's namespaces all together, past
    /// `namespacesReadApart`, are sorted: they come from several ranges).
    @Test func noShapeWithACursorOrANamespaceScansTheTable() throws {
        let fixture = try TestVault()
        for (shape, sql) in SQLiteDatabase.listQueries.enumerated() where shape & (1 | 4 | 8) != 0 {
            let plan = try fixture.database.withReader { connection -> [String] in
                let statement = try connection.statement("EXPLAIN QUERY PLAN " + sql)
                var details: [String] = []
                while try statement.step() { details.append(statement.text(3) ?? "") }
                return details
            }
            #expect(!plan.contains { $0.hasPrefix("SCAN credentials") }, "shape \(shape): \(plan)")
            if shape & 8 == 0 {
                #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "shape \(shape): \(plan)")
            }
        }
    }
}
