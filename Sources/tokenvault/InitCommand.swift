import ArgumentParser
import Foundation
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultServer
import TokenVaultStorage

struct InitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create the data directory (0700), the master key (0600, unless one is given) and the database.")

    @OptionGroup var options: VaultOptions

    @Option(help: "Argon2id cost when --passphrase-file is used: interactive, moderate or sensitive.")
    var kdfProfile: String = PassphraseKDF.Profile.moderate.rawValue

    @Flag(
        help: ArgumentHelp(
            "Succeed without changing anything when the vault already exists.",
            discussion:
                "For a service's start-up step (ExecStartPre=): the first start creates the vault, later ones keep it.")
    )
    var ifMissing = false

    func run() throws {
        try reportingErrors {
            TokenVaultCommand.restrictFileCreation()
            let directory = options.resolvedDataDir
            try createPrivateDirectory(directory)
            let embedded = try options.resolvedStorageURL() == nil
            if embedded, ifMissing, !FileManager.default.fileExists(atPath: options.databasePath),
                let trace = Self.traceOfEarlierVault(directory)
            {
                throw VaultError(
                    code: .vaultNotFound,
                    message: "\(options.databasePath) is missing but a vault was here before (\(trace)): "
                        + "restore it (tokenvault restore BACKUP) rather than start an empty one; "
                        + "to start empty on purpose, run tokenvault init without --if-missing")
            }
            // Not under a daemon or a restore (SQLite: the vault's lock; PostgreSQL has its own).
            let lock = embedded ? try DatabaseLock(databasePath: options.databasePath, role: "init") : nil
            defer { withExtendedLifetime(lock) {} }
            if !embedded || FileManager.default.fileExists(atPath: options.databasePath) {
                let existing = try OpenedVault.openBackend(options)
                defer { existing.close() }
                if !(try existing.terms().isEmpty) {
                    if ifMissing {
                        print("vault \(existing.location) already exists")
                        return
                    }
                    throw VaultError(
                        code: .alreadyInitialised,
                        message: "a vault already exists at \(existing.location)"
                            + (embedded
                                ? "" : " (other hosts share it with the same master key: copy the key file, not init)"))
                }
            }
            let (masterKey, settings, notice) = try masterKey()
            let database = try OpenedVault.openBackend(options)
            try database.migrate()
            try database.setSettings(settings)
            let keyring = try Keyring.bootstrap(masterKey: masterKey, store: database)
            database.close()
            if let notice { print(notice) }
            print("initialised vault \(database.location) (data key term \(keyring.activeTerm))")
        }
    }

    /// What a daemon leaves in a data directory once it has served a vault there (its spool, a WAL,
    /// a database a restore moved aside): a start-up with `--if-missing` must not paper over a
    /// lost vault with an empty one.
    static func traceOfEarlierVault(_ directory: String) -> String? {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.sorted().first { $0 == "spool" || $0 == "vault.db-wal" || $0.hasPrefix("vault.db.replaced-") }
    }

    /// The master key for the new vault and the settings that say where it comes from.
    private func masterKey() throws -> (SecretBytes, [String: String], String?) {
        if let passphraseFile = options.resolvedPassphraseFile {
            guard let profile = PassphraseKDF.Profile(rawValue: kdfProfile) else {
                throw VaultError.invalidField("--kdf-profile", "must be interactive, moderate or sensitive")
            }
            let kdf = PassphraseKDF.generate(profile)
            let key = try kdf.deriveKey(from: try MasterKey.read(passphraseFile: passphraseFile))
            return (key, kdf.settings.merging([OpenedVault.keySourceSetting: "passphrase"]) { $1 }, nil)
        }
        let (path, explicit) = try options.checkedKeyFile()
        let settings = [OpenedVault.keySourceSetting: "file"]
        if explicit || FileManager.default.fileExists(atPath: path) {
            return (try MasterKey.read(keyFile: path), settings, nil)
        }
        let key = try MasterKey.create(keyFile: path)
        return (
            key, settings,
            "generated a new master key at \(path) (mode 0600). Back it up: without it this vault cannot be opened."
        )
    }
}
