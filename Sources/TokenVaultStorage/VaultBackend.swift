import TokenVaultCore

/// A database that holds a vault: SQLite in the data directory (`SQLiteDatabase`) or PostgreSQL
/// shared by several hosts (`PostgresDatabase`). The wiring opens one and hands it to the ledger,
/// the keyring and the admin routes, which see only these protocols.
public protocol VaultBackend: CredentialStore, KeyTermStore, AdminStore, WebhookOutbox {
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
    /// How many of the ledger's writes one transaction may carry (its group commit). SQLite has
    /// one writer, so a large group only saves flushes. On PostgreSQL a group saves statements:
    /// its claimed credentials are locked and read together and its changes sent together
    /// (`PostgresCredentialWriter+Group.swift`).
    var writesPerTransaction: Int { get }
    /// Whether writes that claim no credential may share a transaction. Not on PostgreSQL: such a
    /// write locks rows in the order its body reads them, and two nodes' groups taking the same
    /// credentials in different orders deadlock (seen under the multi-node kill test: each
    /// deadlock costs PostgreSQL's deadlock_timeout and fails every write of the group). A
    /// group's claims are locked without waiting (`PostgresCredentialWriter.lockLate`).
    var groupsUnclaimedWrites: Bool { get }
    /// How many of those transactions may be committed at once: SQLite has one writer; on
    /// PostgreSQL each writer connection carries one, so their flushes overlap.
    var concurrentWriteTransactions: Int { get }
    /// The cache of sealed rows token reads are served from.
    var rowCacheStatistics: RowCacheStatistics { get }
}

extension VaultBackend {
    /// `RecordCache.statistics`, as Core's type.
    static func statistics(of cache: RecordCache) -> RowCacheStatistics {
        let (rows, bytes, hits, misses) = cache.statistics
        return RowCacheStatistics(rows: rows, bytes: bytes, hits: hits, misses: misses)
    }
}

extension SQLiteDatabase: VaultBackend {
    public var location: String { path }
    public var writesPerTransaction: Int { 256 }
    public var groupsUnclaimedWrites: Bool { true }
    public var concurrentWriteTransactions: Int { 1 }
    public var rowCacheStatistics: RowCacheStatistics { Self.statistics(of: cache) }
}
