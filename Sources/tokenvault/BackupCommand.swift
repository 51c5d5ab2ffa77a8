import ArgumentParser
import Foundation
import TokenVaultClient
import TokenVaultCore
import TokenVaultServer

#if canImport(Glibc)
    import Glibc
#endif

struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Write a consistent copy of the vault's database (ciphertext only, mode 0600).",
        discussion: """
            Online: when a daemon serves the vault, the copy is taken through it (POST /v1/admin/backup, \
            which needs the admin permission) while it keeps serving; otherwise from the database file. \
            Either way SQLite's VACUUM INTO makes it, from one read snapshot. The copy holds credentials, \
            key terms (wrapped) and the audit trail, never the master key: keep the key (or passphrase) \
            apart from the backups. Run it as the daemon's user or root: it finds the daemon through \
            the lock file in the data directory. A PostgreSQL vault is backed up with pg_dump.
            """)

    @OptionGroup var options: VaultOptions
    @Option(
        help: ArgumentHelp(
            "Where to write the copy (must not exist).", discussion: "Default: <data-dir>/backups/vault-<time>.db",
            valueName: "file"))
    var to: String?

    func run() async throws {
        try await reportingErrorsAsync {
            TokenVaultCommand.restrictFileCreation()
            if try options.resolvedStorageURL() != nil {
                throw VaultError.invalidField(
                    "--storage-url", "tokenvault backup copies SQLite vaults; back up PostgreSQL with pg_dump")
            }
            try OpenedVault.requireVault(options)
            let target = to.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
            if let target, FileManager.default.fileExists(atPath: target) {
                throw VaultError.conflict("\(target) already exists; backup never overwrites a file")
            }
            let written: (path: String, bytes: Int64)
            if let holder = DatabaseLock.holder(databasePath: options.databasePath), let socket = holder.socket {
                written = try await throughDaemon(socket: socket, holder: holder, target: target)
            } else {
                written = try fromFile(target: target)
            }
            guard chmod(written.path, 0o600) == 0 else {
                throw VaultError.storage("cannot chmod 0600 \(written.path): \(String(cString: strerror(errno)))")
            }
            print(
                "backup written: \(written.path) (\(written.bytes) bytes). It opens only with this vault's master key.")
        }
    }

    /// The daemon writes into its own backups folder; the copy is then moved where it was asked for.
    private func throughDaemon(socket: String, holder: DatabaseLock.Holder, target: String?) async throws -> (
        path: String, bytes: Int64
    ) {
        let outcome = await callDaemon(at: socket) { try await $0.backup(timeout: .seconds(600)) }
        let result: BackupResult
        switch outcome {
        case .success(let written): result = written
        case .failure(let error as TokenVaultClientError):
            throw VaultError(
                code: .storageUnavailable, message: "the daemon (\(holder)) did not write a backup: \(error)")
        case .failure(let error): throw error
        }
        guard let target else { return (result.path, result.bytes) }
        try Self.move(result.path, to: target)
        return (target, result.bytes)
    }

    private func fromFile(target: String?) throws -> (path: String, bytes: Int64) {
        let dataDir = options.resolvedDataDir
        let path: String
        if let target {
            path = target
        } else {
            try BackupFile.createDirectory(dataDir + "/backups")
            try giveToDataDirectoryOwner(dataDir + "/backups", directory: dataDir)
            path = BackupFile.path(in: dataDir + "/backups", at: SystemClock().now)
        }
        let database = try OpenedVault.openBackend(.sqlite(options.databasePath), passwordFile: nil)
        defer { database.close() }
        let bytes = try database.backup(to: path)
        if target == nil { try giveToDataDirectoryOwner(path, directory: dataDir) }
        return (path, bytes)
    }

    /// Never over an existing file: a hard link fails if the target exists (a plain rename would
    /// replace one created since the check); across file systems, a copy that refuses one too.
    static func move(_ source: String, to target: String) throws {
        if link(source, target) == 0 {
            unlink(source)
            return
        }
        guard errno == EXDEV else {
            throw VaultError.storage("cannot move \(source) to \(target): \(String(cString: strerror(errno)))")
        }
        do {
            try FileManager.default.copyItem(atPath: source, toPath: target)
            try FileManager.default.removeItem(atPath: source)
        } catch {
            throw VaultError.storage("cannot move \(source) to \(target): \(error.localizedDescription)")
        }
    }
}
