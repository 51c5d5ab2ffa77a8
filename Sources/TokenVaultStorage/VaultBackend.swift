import TokenVaultCore

/// A database that holds a vault: SQLite in the data directory (`VaultDatabase`) or PostgreSQL
/// shared by several hosts (`PostgresDatabase`). The wiring opens one and hands it to the ledger,
/// the keyring and the admin routes, which see only these protocols.
public protocol VaultBackend: CredentialStore, KeyTermStore, AdminStore {
    /// Where the vault is, for messages (never a password).
    var location: String { get }
    /// Migrations this database still needs (throws when it is newer than this binary or a
    /// shipped migration was edited).
    func pendingMigrations() throws -> [Migration]
    /// Applies pending migrations, each in its own transaction.
    @discardableResult func migrate() throws -> [Migration]
    /// The database's own consistency check: `["ok"]` or the problems it found.
    func integrityCheck() throws -> [String]
    func close()
}

extension VaultDatabase: VaultBackend {
    public var location: String { path }
}
