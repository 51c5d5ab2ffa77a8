import Foundation
import Testing
import TokenVaultCore

/// `AuditOperation.all` is written by hand beside the operations: an operation defined and left
/// out of it would be missing from the documentation check and the audit filters.
@Suite struct AuditOperationTests {
    @Test func everyDefinedOperationIsInAllOnce() throws {
        let source = ModuleRuleTests.sources.appendingPathComponent("TokenVaultCore/AuditOperation.swift")
        let defined = try String(contentsOf: source, encoding: .utf8).split(separator: "\n").compactMap { line in
            line.firstRange(of: "static let ").flatMap { found -> String? in
                let rest = line[found.upperBound...]
                guard let quote = rest.firstRange(of: "Self(\"") else { return nil }
                return String(rest[quote.upperBound...].prefix { $0 != "\"" })
            }
        }
        #expect(defined.count > 10, "read \(defined.count) operations from \(source.path)")
        #expect(Set(AuditOperation.all.map(\.name)) == Set(defined))
        #expect(Set(AuditOperation.all.map(\.name)).count == AuditOperation.all.count)
    }
}
