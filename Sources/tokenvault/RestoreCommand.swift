import ArgumentParser
import Foundation
import TokenVaultCore
import TokenVaultServer
import TokenVaultStorage
import TokenVaultSystem

#if canImport(Glibc)
    import Glibc
#endif

struct RestoreCommand: AsyncParsableCommand {
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

    func run() async throws {
        try await reportingErrorsAsync {
            TokenVaultCommand.restrictFileCreation()
            if try options.resolvedStorageURL() != nil {
                throw VaultError.invalidField(
                    "--storage-url", "tokenvault restore replaces SQLite vaults; restore PostgreSQL with pg_restore")
            }
            let backupPath = URL(fileURLWithPath: file).standardizedFileURL.path
            guard FileManager.default.fileExists(atPath: backupPath) else {
                throw VaultError(code: .vaultNotFound, message: "no backup at \(backupPath)")
            }
            try createPrivateDirectory(options.resolvedDataDir)
            let dataDir = try held { try HeldDirectory(resolving: options.resolvedDataDir) }
            let backup = try Self.openBackup(backupPath, in: dataDir)
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
            try lock.giveToOwner(of: dataDir)

            // Checked in a scratch directory of this process's own, where nobody can swap the
            // file under the check; what was checked is then copied in by descriptor.
            let scratch = try held { try HeldDirectory.scratch() }
            defer { scratch.removeScratch() }
            try held { try backup.copy(to: try scratch.createFile("vault.db")) }
            let document = try await Self.check(scratch.pathOf("vault.db"), options)

            let database = URL(fileURLWithPath: options.databasePath).lastPathComponent
            let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
            let candidate = database + ".restoring-\(stamp)-\(UInt32.random(in: 0...UInt32.max))"
            var installed = false
            defer { if !installed { dataDir.remove(candidate) } }
            let copy = try held { try dataDir.createFile(candidate) }
            try held { try scratch.openFile("vault.db").copy(to: copy) }

            // Whatever is there goes aside, the WAL and shared memory first and the main file last
            // (a WAL left next to the restored file would be replayed into it); undone on failure.
            // Renames within the directory move links as links: nothing outside it is touched.
            let replaced = database + ".replaced-\(stamp)"
            var moved: [String] = []
            func putBack() {
                for suffix in moved.reversed() { try? dataDir.rename(replaced + suffix, to: database + suffix) }
            }
            for suffix in ["-wal", "-shm", "-journal", ""] where dataDir.contains(database + suffix) {
                do {
                    try dataDir.rename(database + suffix, to: replaced + suffix)
                } catch {
                    putBack()
                    throw VaultError.storage("cannot move \(database + suffix) aside: \(error); nothing was replaced")
                }
                moved.append(suffix)
            }
            do {
                try dataDir.rename(candidate, to: database)
            } catch {
                putBack()
                throw VaultError.storage(
                    "cannot put the checked copy in place of \(options.databasePath): \(error); "
                        + "the database that was there is back in place")
            }
            // The name may have been swapped since it was created (the directory is another
            // account's): what is installed must be the file written, or nothing is replaced.
            guard dataDir.names(database, file: copy) else {
                dataDir.remove(database)
                putBack()
                throw VaultError.storage(
                    "the checked copy was replaced under \(candidate) while it was being installed (by a process of "
                        + "the data directory's owner); the database that was there is back in place")
            }
            installed = true
            try? dataDir.flush()
            print(
                "restored \(backupPath): \(document.credentials) credentials, key terms "
                    + "\(document.keyTerms.map(String.init).joined(separator: ", ")), \(document.auditRows) audit rows")
            if moved.contains("") { print("the replaced database is kept at \(dataDir.pathOf(replaced))") }
        }
    }

    /// The backup to restore, opened once: in the data directory only from its backups folder,
    /// by name and without following links (the directory is the service account's); elsewhere
    /// the operator's path as given, refusing a link as its last component.
    static func openBackup(_ path: String, in dataDir: HeldDirectory) throws -> HeldFile {
        guard dataDir.contains(path: path) else { return try held { try HeldFile.open(path) } }
        let url = URL(fileURLWithPath: path)
        let backups = try held { try dataDir.subdirectory(BackupFile.directoryName, create: false) }
        guard backups.isSame(asPath: url.deletingLastPathComponent().path) else {
            throw VaultError.invalidField(
                "file", "\(path) is inside the data directory but not in its backups folder; copy it out first")
        }
        return try held { try backups.openFile(url.lastPathComponent) }
    }

    /// Opens the copy with the key as the daemon would (migrating it if the backup is older) and
    /// checks it; throws, naming the backup, when it does not open or does not verify.
    static func check(_ candidate: String, _ options: VaultOptions) async throws -> VerifyCommand.Document {
        let database = try OpenedVault.openBackend(.sqlite(candidate), passwordFile: nil)
        defer { database.close() }
        let opened: OpenedVault
        do {
            opened = try OpenedVault.open(database, options)
        } catch let error as VaultError {
            throw VaultError(
                code: error.code, message: "the backup does not open: \(error.message); nothing was replaced")
        }
        let document = try await VerifyCommand.check(opened, spoolDirectory: nil)
        // A state spent since the backup must not come back with it.
        try (database as? SQLiteDatabase)?.forgetPendingSignIns()
        // Everything in the main file before it is renamed: the WAL would not follow it.
        try (database as? SQLiteDatabase)?.checkpoint()
        guard document.ok else {
            throw VaultError(
                code: .integrityError,
                message: "the backup does not verify (\(document.failures.joined(separator: "; "))"
                    + "\(document.integrityCheck == ["ok"] ? "" : "; integrity_check: \(document.integrityCheck.joined(separator: "; "))")); "
                    + "nothing was replaced")
        }
        return document
    }
}
