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

    public init(
        backend: String, changeFeedConnected: Bool? = nil, changeFeedReconnects: Int? = nil,
        rowCache: RowCacheStatistics? = nil
    ) {
        self.backend = backend
        self.changeFeedConnected = changeFeedConnected
        self.changeFeedReconnects = changeFeedReconnects
        self.rowCache = rowCache
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
