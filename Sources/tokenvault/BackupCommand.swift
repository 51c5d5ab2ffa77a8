import ArgumentParser
import Foundation
import TokenVaultClient
import TokenVaultCore
import TokenVaultServer
import TokenVaultSystem

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
            let dataDir = try held { try HeldDirectory(resolving: options.resolvedDataDir) }
            let target = to.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
            if let target, FileManager.default.fileExists(atPath: target) {
                throw VaultError.conflict("\(target) already exists; backup never overwrites a file")
            }
            // Inside the data directory, a path may run through links its owner planted; the
            // default destination (its backups folder) is written without following any.
            if let target, dataDir.contains(path: target) {
                throw VaultError.invalidField(
                    "--to", "\(target) is inside the data directory; leave --to out to write to its backups folder")
            }
            let written: (path: String, bytes: Int64)
            if let holder = DatabaseLock.holder(databasePath: options.databasePath), let socket = holder.socket {
                written = try await throughDaemon(socket: socket, holder: holder, dataDir: dataDir, target: target)
            } else {
                written = try await fromFile(dataDir: dataDir, target: target)
            }
            print(
                "backup written: \(written.path) (\(written.bytes) bytes). It opens only with this vault's master key.")
        }
    }

    /// The daemon writes into its own backups folder; the copy is then moved where it was asked
    /// for. Its answer is checked, not trusted (the daemon runs as the service account, and the
    /// socket was found in a file that account writes): the file must be in the data directory's
    /// backups folder, and it is opened there by name, without following links.
    private func throughDaemon(socket: String, holder: DatabaseLock.Holder, dataDir: HeldDirectory, target: String?)
        async throws -> (path: String, bytes: Int64)
    {
        try Self.checkSocket(socket, ownedBy: dataDir)
        let outcome = await callDaemon(at: socket) { try await $0.backup(timeout: .seconds(600)) }
        let result: BackupResult
        switch outcome {
        case .success(let written): result = written
        case .failure(let error as TokenVaultClientError):
            throw VaultError(
                code: .storageUnavailable, message: "the daemon (\(holder)) did not write a backup: \(error)")
        case .failure(let error): throw error
        }
        let answered = URL(fileURLWithPath: result.path)
        let backups = try held { try dataDir.subdirectory(BackupFile.directoryName, create: false) }
        guard backups.isSame(asPath: answered.deletingLastPathComponent().path) else {
            throw VaultError.storage(
                "the daemon (\(holder)) answered a backup at \(result.path), outside \(backups.path); nothing was moved"
            )
        }
        let name = answered.lastPathComponent
        let copy = try held { try backups.openFile(name) }
        guard let target else {
            try held { try copy.setMode(0o600) }
            return (copy.path, try held { try copy.size() })
        }
        let bytes: Int64
        do {
            bytes = try Self.copy(copy, toNew: { try HeldFile.create(target) }, removing: { unlink(target) })
        } catch {
            throw VaultError.storage("\(error); the daemon's copy stays at \(copy.path)")
        }
        backups.remove(name)
        return (target, bytes)
    }

    /// Offline: the database file and its WAL are copied (by descriptor, under the vault's lock,
    /// held for the copies only) into a scratch directory of this process's own, and SQLite makes
    /// the copy there, so it never opens a path in a directory another account controls. The
    /// scratch directory needs room for the database twice.
    private func fromFile(dataDir: HeldDirectory, target: String?) async throws -> (path: String, bytes: Int64) {
        let scratch = try held { try HeldDirectory.scratch() }
        defer { scratch.removeScratch() }
        let database = URL(fileURLWithPath: options.databasePath).lastPathComponent
        let lock = try DatabaseLock(databasePath: options.databasePath, role: "backup")
        try withExtendedLifetime(lock) {
            try lock.giveToOwner(of: dataDir)
            for suffix in ["", "-wal"] where suffix.isEmpty || dataDir.contains(database + suffix) {
                try held { try dataDir.openFile(database + suffix).copy(to: try scratch.createFile(database + suffix)) }
            }
        }
        let backend = try OpenedVault.openBackend(.sqlite(scratch.pathOf(database)), passwordFile: nil)
        defer { backend.close() }
        _ = try await backend.backup(to: scratch.pathOf("backup.db"))
        let copy = try held { try scratch.openFile("backup.db") }
        if let target {
            return (target, try Self.copy(copy, toNew: { try HeldFile.create(target) }, removing: { unlink(target) }))
        }
        let backups = try held { try dataDir.subdirectory(BackupFile.directoryName, create: true) }
        let name = BackupFile.name(at: SystemClock().now)
        let bytes = try Self.copy(copy, toNew: { try backups.createFile(name) }, removing: { backups.remove(name) })
        return (backups.pathOf(name), bytes)
    }

    /// Copies `source` into the file `create` makes, which `remove` takes away again when the copy
    /// fails: never a half-written copy under a backup's name.
    private static func copy(
        _ source: HeldFile, toNew create: () throws -> HeldFile, removing remove: () -> Void
    ) throws -> Int64 {
        let destination = try held { try create() }
        do {
            return try held { try source.copy(to: destination) }
        } catch {
            remove()
            throw error
        }
    }

    /// Run as root, the socket named in the lock file (which the service account writes) must be
    /// a socket of the data directory's owner, not a link to someone else's.
    static func checkSocket(_ socket: String, ownedBy dataDir: HeldDirectory) throws {
        guard geteuid() == 0 else { return }
        var info = stat()
        guard lstat(socket, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK, info.st_uid == dataDir.owner else {
            throw VaultError.storage(
                "the lock file names \(socket) as the daemon's socket, which is not a socket owned by uid "
                    + "\(dataDir.owner) (the data directory's owner); nothing was asked of it")
        }
    }
}

/// A file-system refusal from `HeldDirectory` or `HeldFile` as the command's error.
@discardableResult
func held<Value>(_ body: () throws -> Value) throws -> Value {
    do {
        return try body()
    } catch let error as HeldDirectory.Failure {
        throw VaultError.storage(error.description)
    }
}
