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

    public init(backend: String, changeFeedConnected: Bool? = nil, changeFeedReconnects: Int? = nil) {
        self.backend = backend
        self.changeFeedConnected = changeFeedConnected
        self.changeFeedReconnects = changeFeedReconnects
    }
}
