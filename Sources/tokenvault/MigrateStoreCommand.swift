import ArgumentParser
import Foundation
import TokenVaultCore
import TokenVaultLedger
import TokenVaultServer
import TokenVaultStorage

/// Moves a whole vault between the embedded SQLite file and PostgreSQL (either way).
struct MigrateStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate-store",
        abstract:
            "Copy a vault between SQLite and PostgreSQL: every credential, key term, journal and audit row, still sealed.",
        discussion: """
            Stop every daemon using the source first (a SQLite source is locked against a daemon \
            while the copy runs). The target is written in one transaction, so a copy that fails leaves \
            it as it was; a target that already holds a vault is refused unless --force, which replaces \
            it. Afterwards the row counts are compared and every sealed field and the audit chain are \
            opened in the target with the vault's key (the key options below; the same key opens both). \
            Exit code 4 when that check fails.

            Example: tokenvault migrate-store --from sqlite:/var/lib/tokenvault/vault.db \
            --to 'postgres://tokenvault@db.internal/tokenvault?sslmode=verify-full&sslrootcert=/etc/ssl/db-ca.pem' \
            --storage-password-file /etc/tokenvault/db.password
            """)

    @OptionGroup var options: VaultOptions
    @Option(help: ArgumentHelp("The vault to copy: sqlite:PATH or postgres://…", valueName: "location"))
    var from: String
    @Option(help: ArgumentHelp("Where to copy it: sqlite:PATH or postgres://…", valueName: "location"))
    var to: String
    @Flag(help: "Replace a vault already in the target.") var force = false

    func run() async throws {
        var clean = true
        try await reportingErrorsAsync {
            TokenVaultCommand.restrictFileCreation()
            let source = try StorageLocation(argument: from, option: "--from")
            let target = try StorageLocation(argument: to, option: "--to")
            guard source.description != target.description else {
                throw VaultError.invalidField("--to", "is the same database as --from")
            }
            if options.storageURL != nil {
                throw VaultError.invalidField("--storage-url", "migrate-store takes --from and --to instead")
            }
            let passwordFile = try options.resolvedStoragePasswordFile()
            if case .sqlite(let path) = target {
                try createPrivateDirectory(URL(fileURLWithPath: path).deletingLastPathComponent().path)
            }
            // No daemon may serve (and change) a SQLite side while it is copied.
            let locks = try [source, target].compactMap { location -> DatabaseLock? in
                guard case .sqlite(let path) = location else { return nil }
                return try DatabaseLock(databasePath: path, role: "migrate-store")
            }
            defer { withExtendedLifetime(locks) {} }

            if case .sqlite(let path) = source, !FileManager.default.fileExists(atPath: path) {
                throw VaultError(code: .vaultNotFound, message: "no vault at \(path)")
            }
            let from = try OpenedVault.openBackend(source, passwordFile: passwordFile)
            defer { from.close() }
            guard !(try from.terms().isEmpty) else {
                throw VaultError(code: .vaultNotFound, message: "no vault in \(from.location)")
            }
            // The key must open the source before anything is written anywhere.
            _ = try OpenedVault.unlock(from, options)
            try from.migrate()
            let into = try OpenedVault.openBackend(target, passwordFile: passwordFile)
            defer { into.close() }
            try into.migrate()
            let report = try await StoreCopy.copy(from: from, to: into, replacing: force)

            let (keyring, _) = try OpenedVault.unlock(into, options)
            let vault = Vault(store: into, sealer: keyring)
            let fields = try await vault.verify()
            let audit = try await vault.verifyAudit()
            clean = fields.isClean && audit.isClean
            let rows = report.rows
            print(
                "copied \(from.location) to \(into.location): \(rows["credentials"] ?? 0) credentials, "
                    + "\(rows["key_terms"] ?? 0) key terms, \(rows["refresh_attempts"] ?? 0) refresh journal rows, "
                    + "\(rows["audit_events"] ?? 0) audit rows, \(rows["vault_meta"] ?? 0) settings")
            print(
                "checked in the target: row counts equal; \(fields.sealedFields - fields.failures.count) of "
                    + "\(fields.sealedFields) sealed fields opened; \(audit.rows) audit rows, chain "
                    + (audit.isClean ? "intact" : "broken"))
            for failure in fields.failures + audit.failures { print("  \(failure)") }
        }
        if !clean { throw ExitCode(4) }
    }
}
