import Foundation
import Logging
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultStorage
import TokenVaultSystem

/// Wiring: the database, the keyring and the vault, opened in the one safe order.
///
/// 1. open the database and check its schema (refuses changed or newer migrations);
/// 2. load the master key and unwrap every data key (refuses a wrong key);
/// 3. only then apply pending migrations.
/// Steps 1-2 write nothing, so a wrong key or a too-old binary leaves the file byte-for-byte as it was.
struct OpenedVault {
    static let keySourceSetting = "key.source"

    let database: any VaultBackend
    let keyring: Keyring
    let vault: Vault
    let keyDescription: String

    /// The daemon's provider table is put in force by its engine.
    /// `maximumClockOffset`: the daemon's; on PostgreSQL its vault decides by a `CorrectedClock`
    /// (tools decide nothing about expiry and keep the host's clock).
    static func open(
        _ options: VaultOptions, commitRetryCap: Double = 30, maximumClockOffset: Double? = nil
    ) throws -> OpenedVault {
        TokenVaultCommand.restrictFileCreation()
        try requireVault(options)
        let database = try openBackend(options)
        if try options.resolvedStorageURL() != nil, try database.terms().isEmpty {
            database.close()
            throw VaultError(
                code: .vaultNotFound,
                message: "no vault in \(database.location); create one with: tokenvault init --storage-url URL")
        }
        let clock: any VaultClock =
            if let maximumClockOffset, database is PostgresDatabase {
                CorrectedClock(maximumOffset: maximumClockOffset)
            } else {
                SystemClock()
            }
        return try open(database, options, commitRetryCap: commitRetryCap, clock: clock)
    }

    /// A database already opened (the vault's own, or a copy of a backup that `restore` checks):
    /// unlocked with the key `options` name, then migrated. `commitRetryCap`: the longest wait
    /// between tries of a held commit (the daemon keeps it well under the lease period, so an
    /// answer held through an outage is committed before anyone could take its attempt over).
    static func open(
        _ database: any VaultBackend, _ options: VaultOptions, commitRetryCap: Double = 30,
        clock: any VaultClock = SystemClock()
    ) throws -> OpenedVault {
        let (keyring, description) = try unlock(database, options)
        try database.migrate()
        try keyring.recordMissingSettings()
        return OpenedVault(
            database: database, keyring: keyring,
            vault: Vault(
                store: database, sealer: keyring, clock: clock,
                options: Vault.Options(
                    commitRetryCap: commitRetryCap, maximumGroup: database.writesPerTransaction,
                    concurrentTransactions: database.concurrentWriteTransactions,
                    groupsUnclaimedWrites: database.groupsUnclaimedWrites, auditChain: auditChain(database, options))),
            keyDescription: description)
    }

    /// The audit chain this process appends to: on a vault several nodes share, the node's own
    /// (its identity in the data directory), so that no node's audited writes wait for another's;
    /// a SQLite vault has one writer and one chain. A data directory that cannot hold an identity
    /// gets a chain for this run only (a chain's name needs no more than not being another
    /// process's at the same time, and two sharing one still take turns correctly).
    static func auditChain(_ database: any VaultBackend, _ options: VaultOptions) -> String {
        guard database is PostgresDatabase else { return "" }
        return (try? NodeIdentity.load(dataDirectory: options.resolvedDataDir)) ?? NodeIdentity.random()
    }

    /// The vault's database: PostgreSQL when a storage URL is given, else the SQLite file in the
    /// data directory. Checks the schema against this binary; writes nothing.
    static func openBackend(_ options: VaultOptions) throws -> any VaultBackend {
        let location = try options.resolvedStorageURL().map(StorageLocation.postgres) ?? .sqlite(options.databasePath)
        return try openBackend(
            location, passwordFile: try options.resolvedStoragePasswordFile(),
            cacheBytes: try options.configuredStorage().cacheBytes)
    }

    /// `cacheBytes`: the bound of the cache of sealed rows (`storage.cache_bytes`; nil: the
    /// backend's default).
    static func openBackend(_ location: StorageLocation, passwordFile: String?, cacheBytes: Int? = nil) throws
        -> any VaultBackend
    {
        let url: String
        switch location {
        case .sqlite(let path):
            return try SQLiteDatabase(
                path: path, checksum: SHA256.hex, cacheBytes: cacheBytes ?? SQLiteDatabase.defaultCacheBytes)
        case .postgres(let given): url = given
        }
        var password: String?
        if let file = passwordFile {
            do {
                let secret = try PrivateFile.read(file, what: "PostgreSQL password file", maximumSize: 1024)
                password = secret.revealString().trimmingCharacters(in: .whitespacesAndNewlines)
            } catch {
                throw VaultError.keySource("\(error)")
            }
        }
        var configuration = try PostgresDatabase.Configuration(url: url, password: password)
        if let cacheBytes { configuration.cacheBytes = cacheBytes }
        var logger = Logger(label: "tokenvault.postgres")
        logger.logLevel = .warning
        let database = try PostgresDatabase(configuration: configuration, checksum: SHA256.hex, logger: logger)
        _ = try database.pendingMigrations()
        return database
    }

    /// Refuses, with the command that creates one, when there is no vault in the data directory
    /// (a PostgreSQL vault is looked for once connected).
    static func requireVault(_ options: VaultOptions) throws {
        guard try options.resolvedStorageURL() == nil else { return }
        guard FileManager.default.fileExists(atPath: options.databasePath) else {
            throw VaultError(
                code: .vaultNotFound,
                message: "no vault at \(options.resolvedDataDir) (\(options.databasePath) does not exist); "
                    + "create one with: tokenvault init --data-dir \(options.resolvedDataDir)")
        }
    }

    /// Loads the master key the vault's settings call for and unwraps the data keys.
    static func unlock(_ database: any VaultBackend, _ options: VaultOptions) throws -> (Keyring, String) {
        if try database.setting(keySourceSetting) == "passphrase" {
            guard let passphraseFile = options.resolvedPassphraseFile else {
                throw VaultError.keySource(
                    "this vault is protected by a passphrase: pass --passphrase-file or set TOKENVAULT_PASSPHRASE_FILE")
            }
            let kdf = try PassphraseKDF(settings: [
                PassphraseKDF.settingKeys.salt: try database.setting(PassphraseKDF.settingKeys.salt),
                PassphraseKDF.settingKeys.opsLimit: try database.setting(PassphraseKDF.settingKeys.opsLimit),
                PassphraseKDF.settingKeys.memLimit: try database.setting(PassphraseKDF.settingKeys.memLimit),
            ])
            let key = try kdf.deriveKey(from: try MasterKey.read(passphraseFile: passphraseFile))
            return (try keyring(key, database, source: "passphrase file \(passphraseFile)"), "passphrase")
        }
        let keyFile = try options.checkedKeyFile().path
        do {
            return (try keyring(try MasterKey.read(keyFile: keyFile), database, source: "key file \(keyFile)"), keyFile)
        } catch let error as VaultError where error.code == .wrongMasterKey {
            // A rekey that committed but crashed before renaming its new key file into place.
            let pending = keyFile + ".new"
            guard FileManager.default.fileExists(atPath: pending),
                let recovered = try? keyring(try MasterKey.read(keyFile: pending), database, source: pending)
            else { throw error }
            guard rename(pending, keyFile) == 0 else { throw error }
            TerminalText.error("tokenvault: notice: finished an interrupted rekey: \(pending) is now \(keyFile)")
            return (recovered, keyFile)
        }
    }

    private static func keyring(_ key: SecretBytes, _ database: any VaultBackend, source: String) throws -> Keyring {
        do {
            return try Keyring(masterKey: key, store: database)
        } catch let error as VaultError where error.code == .wrongMasterKey {
            throw VaultError.wrongMasterKey("\(error.message) (\(source), vault \(database.location))")
        }
    }
}
