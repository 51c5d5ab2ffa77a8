import ArgumentParser
import Foundation
import TokenVaultCore
import TokenVaultServer
import TokenVaultStorage
import TokenVaultSystem

#if canImport(Glibc)
    import Glibc
#endif

struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Replace the vault's database with a backup, after checking the backup opens with the key.",
        discussion: """
            Refused while a daemon serves the vault (stop it first). The backup is copied next to the \
            vault and checked there, as `verify` checks: it must open with the master key (or passphrase) \
            given now, and every sealed field and the audit chain must check out. Only then is the current \
            database (with its WAL) moved aside as vault.db.replaced-<time> and the copy put in its place; \
            the backup file itself is never changed. A SQLite vault only: restore PostgreSQL with pg_restore.
            """)

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The backup file (from tokenvault backup).", valueName: "file")) var file: String

    func run() throws {
        try reportingErrors {
            TokenVaultCommand.restrictFileCreation()
            if try options.resolvedStorageURL() != nil {
                throw VaultError.invalidField(
                    "--storage-url", "tokenvault restore replaces SQLite vaults; restore PostgreSQL with pg_restore")
            }
            let backup = URL(fileURLWithPath: file).standardizedFileURL.path
            guard FileManager.default.fileExists(atPath: backup) else {
                throw VaultError(code: .vaultNotFound, message: "no backup at \(backup)")
            }
            let directory = options.resolvedDataDir
            try createPrivateDirectory(directory)
            let lock: DatabaseLock
            do {
                lock = try DatabaseLock(databasePath: options.databasePath, role: "restore")
            } catch let error as VaultError where error.code == .daemonRunning {
                throw VaultError(
                    code: .daemonRunning,
                    message: "\(error.message). Stop the daemon before restoring "
                        + "(systemctl stop tokenvault.socket tokenvault.service); nothing was replaced")
            }
            defer { withExtendedLifetime(lock) {} }
            try giveToDataDirectoryOwner(options.databasePath + ".lock", directory: directory)

            let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
            let candidate = options.databasePath + ".restoring-\(stamp)"
            var installed = false
            defer { if !installed { Self.removeDatabase(candidate) } }
            do {
                try FileManager.default.copyItem(atPath: backup, toPath: candidate)
            } catch {
                throw VaultError.storage("cannot copy \(backup) to \(candidate): \(error.localizedDescription)")
            }
            let document = try Self.check(candidate, options)
            try giveToDataDirectoryOwner(candidate, directory: directory)

            // Whatever is there goes aside, the WAL and shared memory first and the main file last
            // (a WAL left next to the restored file would be replayed into it); undone on failure.
            let replaced = options.databasePath + ".replaced-\(stamp)"
            var moved: [String] = []
            func putBack() {
                for suffix in moved.reversed() { rename(replaced + suffix, options.databasePath + suffix) }
            }
            for suffix in ["-wal", "-shm", "-journal", ""]
            where FileManager.default.fileExists(atPath: options.databasePath + suffix) {
                guard rename(options.databasePath + suffix, replaced + suffix) == 0 else {
                    let problem = String(cString: strerror(errno))
                    putBack()
                    throw VaultError.storage(
                        "cannot move \(options.databasePath + suffix) aside: \(problem); nothing was replaced")
                }
                moved.append(suffix)
            }
            guard rename(candidate, options.databasePath) == 0 else {
                let problem = String(cString: strerror(errno))
                putBack()
                throw VaultError.storage(
                    "cannot put the checked copy in place of \(options.databasePath): \(problem); "
                        + "the database that was there is back in place")
            }
            installed = true
            Self.removeDatabase(candidate)
            try? DurableFile.flushDirectory(directory)
            print(
                "restored \(backup): \(document.credentials) credentials, key terms "
                    + "\(document.keyTerms.map(String.init).joined(separator: ", ")), \(document.auditRows) audit rows")
            if moved.contains("") { print("the replaced database is kept at \(replaced)") }
        }
    }

    /// Opens the copy with the key as the daemon would (migrating it if the backup is older) and
    /// checks it; throws, naming the backup, when it does not open or does not verify.
    static func check(_ candidate: String, _ options: VaultOptions) throws -> VerifyCommand.Document {
        let database = try OpenedVault.openBackend(.sqlite(candidate), passwordFile: nil)
        defer { database.close() }
        let opened: OpenedVault
        do {
            opened = try OpenedVault.open(database, options)
        } catch let error as VaultError {
            throw VaultError(
                code: error.code, message: "the backup does not open: \(error.message); nothing was replaced")
        }
        let document = try VerifyCommand.check(opened, spoolDirectory: nil)
        // Everything in the main file before it is renamed: the WAL would not follow it.
        try (database as? VaultDatabase)?.checkpoint()
        guard document.ok else {
            throw VaultError(
                code: .integrityError,
                message: "the backup does not verify (\(document.failures.joined(separator: "; "))"
                    + "\(document.integrityCheck == ["ok"] ? "" : "; integrity_check: \(document.integrityCheck.joined(separator: "; "))")); "
                    + "nothing was replaced")
        }
        return document
    }

    /// A database file and its WAL and shared-memory files.
    static func removeDatabase(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
    }
}
