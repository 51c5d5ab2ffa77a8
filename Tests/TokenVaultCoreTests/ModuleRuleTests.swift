import Foundation
import Testing

/// The dependency rule Package.swift's header states, checked against the imports of every
/// source file: a target that imports a module the rule forbids fails here, not in a review.
@Suite struct ModuleRuleTests {
    /// The project's library targets, each with the project modules it may import.
    static let projectImports: [String: Set<String>] = [
        "TokenVaultCore": [],
        "TokenVaultSystem": ["TokenVaultCore"],
        "TokenVaultCrypto": ["TokenVaultCore", "TokenVaultSystem"],
        "TokenVaultStorage": ["TokenVaultCore"],
        "TokenVaultProviders": ["TokenVaultCore", "TokenVaultSystem"],
        "TokenVaultEngine": ["TokenVaultCore"],
        "TokenVaultServer": ["TokenVaultCore", "TokenVaultSystem", "TokenVaultProviders"],
        "TokenVaultCourier": ["TokenVaultCore", "TokenVaultSystem", "TokenVaultCrypto", "TokenVaultProviders"],
        "TokenVaultClient": [],
    ]

    /// Modules one target alone may import: libsodium and swift-crypto (Crypto), the database
    /// drivers (Storage), the process calls (System).
    static let owners: [String: String] = [
        "CSodium": "TokenVaultCrypto", "Crypto": "TokenVaultCrypto", "CSQLite": "TokenVaultStorage",
        "PostgresNIO": "TokenVaultStorage", "CProcess": "TokenVaultSystem",
    ]

    /// Core is the domain: the standard library, the C library (locked memory) and these; no
    /// networking, no driver, no library.
    static let coreImports: Set<String> = ["Foundation", "Dispatch", "Synchronization", "Glibc", "Darwin"]

    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    /// `import X`, `@testable import X`, `import struct X.Y`: X, per line.
    static func imports(of file: URL) throws -> [String] {
        try String(contentsOf: file, encoding: .utf8).split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ").filter { !$0.hasPrefix("@") }
            guard words.first == "import", words.count >= 2 else { return nil }
            let module = words.count >= 3 ? words[2] : words[1]
            return String(module.split(separator: ".")[0])
        }
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
}
