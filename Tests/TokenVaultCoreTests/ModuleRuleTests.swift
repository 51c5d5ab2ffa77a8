import Foundation
import Testing

/// The dependency rule Package.swift's header states, checked against the imports of every
/// source file: a target that imports a module the rule forbids fails here, not in a review.
@Suite struct ModuleRuleTests {
    /// The project's library targets, each with the project modules it may import.
    static let projectImports: [String: Set<String>] = [
        "TokenVaultCore": [],
        "TokenVaultLedger": ["TokenVaultCore"],
        "TokenVaultSystem": ["TokenVaultCore"],
        "TokenVaultCrypto": ["TokenVaultCore", "TokenVaultSystem"],
        "TokenVaultStorage": ["TokenVaultCore"],
        "TokenVaultProviders": ["TokenVaultCore", "TokenVaultSystem"],
        "TokenVaultEngine": ["TokenVaultCore", "TokenVaultLedger"],
        "TokenVaultServer": ["TokenVaultCore", "TokenVaultLedger", "TokenVaultSystem", "TokenVaultProviders"],
        "TokenVaultCourier": ["TokenVaultCore", "TokenVaultSystem", "TokenVaultCrypto", "TokenVaultProviders"],
        "TokenVaultClient": [],
    ]

    /// Modules one target alone may import: libsodium and swift-crypto (Crypto), the database
    /// drivers (Storage), the process calls (System).
    static let owners: [String: String] = [
        "CSodium": "TokenVaultCrypto", "Crypto": "TokenVaultCrypto", "CryptoExtras": "TokenVaultCrypto",
        "CSQLite": "TokenVaultStorage",
        "PostgresNIO": "TokenVaultStorage", "CProcess": "TokenVaultSystem",
    ]

    /// Core is the domain: the standard library, the C library (locked memory) and these; no
    /// networking, no driver, no library.
    static let coreImports: Set<String> = ["Foundation", "Dispatch", "Synchronization", "Glibc", "Darwin"]

    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    /// X of every import declaration in `text`: `import X`, with attributes (`@testable`,
    /// `@_exported`, `@preconcurrency`), an access level (`public import X`), a kind
    /// (`import struct X.Y`) or a comment after it.
    static func imports(in text: String) -> [String] {
        let modifiers: Set<Substring> = ["public", "package", "internal", "fileprivate", "private"]
        let kinds: Set<Substring> = ["struct", "class", "enum", "protocol", "func", "var", "let", "typealias"]
        return text.split(separator: "\n").compactMap { line in
            let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false)[0]
            var words = code.split(whereSeparator: { $0 == " " || $0 == "\t" })[...]
            while let first = words.first, first.hasPrefix("@") || modifiers.contains(first) { words.removeFirst() }
            guard words.first == "import" else { return nil }
            words.removeFirst()
            if let kind = words.first, kinds.contains(kind) { words.removeFirst() }
            return words.first.map { String($0.split(separator: ".")[0]) }
        }
    }

    static func imports(of file: URL) throws -> [String] {
        imports(in: try String(contentsOf: file, encoding: .utf8))
    }

    /// Every way an import can be written is read as one, so none slips past the rule.
    @Test func everyFormOfImportIsRead() {
        let text = """
            import TokenVaultA
            @testable import TokenVaultB
            public import TokenVaultC
            package import TokenVaultD // for the tests
            @_exported import TokenVaultE
            @preconcurrency internal import TokenVaultF
            import struct TokenVaultG.Thing
            \timport TokenVaultH
            // import NotAnImport
            let important = 1
            """
        #expect(
            Self.imports(in: text) == (["A", "B", "C", "D", "E", "F", "G", "H"].map { "TokenVault\($0)" }))
    }

    static func swiftFiles(of target: String) -> [URL] {
        let enumerator = FileManager.default.enumerator(
            at: sources.appendingPathComponent(target), includingPropertiesForKeys: nil)
        return (enumerator?.allObjects as? [URL] ?? []).filter { $0.pathExtension == "swift" }
    }

    @Test func everyTargetImportsOnlyWhatTheRuleAllows() throws {
        let targets = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path)
        var checked = 0
        for target in targets {
            for file in Self.swiftFiles(of: target) {
                checked += 1
                for module in try Self.imports(of: file) {
                    let place = "\(target)/\(file.lastPathComponent) imports \(module)"
                    if let owner = Self.owners[module] {
                        #expect(owner == target, "\(place): only \(owner) may")
                    }
                    if let allowed = Self.projectImports[target], module.hasPrefix("TokenVault") {
                        #expect(allowed.contains(module), "\(place): the rule allows \(allowed.sorted())")
                    }
                    if target == "TokenVaultCore" {
                        #expect(Self.coreImports.contains(module), "\(place): Core is the domain")
                    }
                }
            }
        }
        #expect(checked > 200, "only \(checked) files found under \(Self.sources.path)")
        #expect(Set(Self.projectImports.keys).isSubset(of: Set(targets)))
    }

    /// Core is the domain: no sleeping and no executors. Waiting, retrying and running blocking
    /// work belong to the ledger and the modules that drive it.
    @Test func coreNeitherSleepsNorRunsWorkElsewhere() throws {
        let forbidden = ["Task.sleep", "DispatchQueue", "Thread(", "TaskExecutor", "usleep(", "nanosleep("]
        for file in Self.swiftFiles(of: "TokenVaultCore") {
            let code = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
                .map { $0.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false)[0] }
            for word in forbidden where code.contains(where: { $0.contains(word) }) {
                Issue.record("TokenVaultCore/\(file.lastPathComponent) uses \(word)")
            }
        }
    }
}
