import Foundation

/// Which database holds the vault and, for one shared by several nodes, whether this node hears
/// the others' changes (health and metrics show it; the wiring reports it).
public struct StorageStatus: Sendable, Equatable {
    /// `sqlite` or `postgres`.
    public var backend: String
    /// PostgreSQL: this node's change listener is connected (while it is not, the node reads
    /// everything from the database and its cache is unused). Nil for SQLite.
    public var changeFeedConnected: Bool?
    /// PostgreSQL: how many times the change listener reconnected and replayed what it missed.
    public var changeFeedReconnects: Int?

    /// The cache of sealed rows that token reads are served from (metrics only).
    public var rowCache: RowCacheStatistics?
    /// PostgreSQL: the standbys the server replicates to, as the last heartbeat saw them.
    public var replication: ReplicationStatus?

    public init(
        backend: String, changeFeedConnected: Bool? = nil, changeFeedReconnects: Int? = nil,
        rowCache: RowCacheStatistics? = nil, replication: ReplicationStatus? = nil
    ) {
        self.backend = backend
        self.changeFeedConnected = changeFeedConnected
        self.changeFeedReconnects = changeFeedReconnects
        self.rowCache = rowCache
        self.replication = replication
    }
}

/// What a node can see of its PostgreSQL server's replication without monitoring rights: how
/// many standbys stream from it, and whether a commit waits for one (`synchronous_standby_names`
/// set, and `synchronous_commit` not `local` or `off`). Standbys that stream asynchronously are
/// what a failover can lose commits to (docs/scale-out.md, "Failover").
public struct ReplicationStatus: Sendable, Equatable {
    public var standbys: Int
    public var synchronous: Bool

    public init(standbys: Int, synchronous: Bool) {
        self.standbys = standbys
        self.synchronous = synchronous
    }

    /// From the server's settings: `synchronous_standby_names` and `synchronous_commit`.
    public init(standbys: Int, standbyNames: String, synchronousCommit: String) {
        self.standbys = standbys
        synchronous =
            !standbyNames.trimmingCharacters(in: .whitespaces).isEmpty && !["local", "off"].contains(synchronousCommit)
    }
}

/// What the cache of sealed rows holds and how often it answered, so an operator can size
/// `storage.cache_bytes` from the hit rate.
public struct RowCacheStatistics: Sendable, Equatable {
    public var rows: Int
    /// The cache's own estimate of what its rows hold.
    public var bytes: Int
    public var hits: Int
    public var misses: Int

    public init(rows: Int, bytes: Int, hits: Int, misses: Int) {
        self.rows = rows
        self.bytes = bytes
        self.hits = hits
        self.misses = misses
    }
}
