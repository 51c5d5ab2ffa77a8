/// A node's heartbeat in the vault's `nodes` table: one row per node (a data directory), whose
/// `beat` counter the node raises every few seconds. Every refresh attempt a node journals is
/// leased to it by name (`<node>/<incarnation>`), so one statement per beat renews the leases
/// of everything the node has in flight, however many, and another node may take one over only
/// after it has watched that counter stand still for a whole lease period (`SilenceWatch`).
///
/// Times here are the database's: `clock_timestamp()` on PostgreSQL, the host's clock on
/// SQLite (one host owns the file). A node compares them with its own clock only to measure how
/// far off its own is (`CorrectedClock`), never to judge a lease.
public struct NodeBeat: Sendable, Equatable {
    /// The node's identity (random, created once per data directory).
    public var node: String
    /// This run of the node's daemon (random per start).
    public var incarnation: String
    /// For operators only (`tokenvault nodes`); nothing is decided by them.
    public var host: String
    public var pid: Int64
    /// The database's clock minus this node's, in seconds, as last measured (`CorrectedClock`);
    /// nil where it is not measured (SQLite: the database's clock is the host's).
    public var clockOffset: Double?
    /// The database timeline on which this node last re-applied what it retained
    /// (`FailoverGuard`); nil before its first reconciliation, and on SQLite.
    public var reconciledTimeline: Int64?

    public init(
        node: String, incarnation: String, host: String, pid: Int64, clockOffset: Double? = nil,
        reconciledTimeline: Int64? = nil
    ) {
        self.node = node
        self.incarnation = incarnation
        self.host = host
        self.pid = pid
        self.clockOffset = clockOffset
        self.reconciledTimeline = reconciledTimeline
    }
}

/// One row of the `nodes` table.
public struct NodeRecord: Sendable, Equatable {
    public var node: String
    public var incarnation: String
    /// Raised by one at every beat: what another node watches.
    public var beat: Int64
    /// The database's time of the last beat.
    public var beatAt: Timestamp
    /// The database's time when this incarnation first beat.
    public var startedAt: Timestamp
    public var host: String
    public var pid: Int64
    /// The node's clock offset as its last beat reported it (`NodeBeat.clockOffset`).
    public var clockOffset: Double?
    /// The timeline the node last reported as reconciled (`NodeBeat.reconciledTimeline`).
    public var reconciledTimeline: Int64?

    public init(
        node: String, incarnation: String, beat: Int64, beatAt: Timestamp, startedAt: Timestamp, host: String,
        pid: Int64, clockOffset: Double? = nil, reconciledTimeline: Int64? = nil
    ) {
        self.node = node
        self.incarnation = incarnation
        self.beat = beat
        self.beatAt = beatAt
        self.startedAt = startedAt
        self.host = host
        self.pid = pid
        self.clockOffset = clockOffset
        self.reconciledTimeline = reconciledTimeline
    }
}

/// What one beat returns: every node's row as the database had it, and the database's time.
public struct HeartbeatReading: Sendable, Equatable {
    public var databaseNow: Timestamp
    public var nodes: [NodeRecord]
    /// The database server's timeline (PostgreSQL's: it goes up by one at every promotion of a
    /// standby and every point-in-time recovery); nil on SQLite, which has none.
    public var timeline: Int64?

    public init(databaseNow: Timestamp, nodes: [NodeRecord], timeline: Int64? = nil) {
        self.databaseNow = databaseNow
        self.nodes = nodes
        self.timeline = timeline
    }
}

/// The storage side of heartbeats. Implemented by TokenVaultStorage for both backends.
public protocol NodeRegistry: Sendable {
    /// Registers or renews `beat.node` (one statement on PostgreSQL) and reads every node's row,
    /// with the database's time.
    func heartbeat(_ beat: NodeBeat) async throws -> HeartbeatReading
    /// Every node's row, for `tokenvault nodes`.
    func nodes() async throws -> [NodeRecord]
    /// The operator's word that `node` is gone for good: its row is deleted and its open refresh
    /// attempts are released (their lease owner becomes `LeaseName.released`), so other nodes
    /// resume them at once. Returns how many attempts were released, or nil when no such node
    /// is registered and it held no attempt.
    func forgetNode(_ node: String) async throws -> Int?
}

/// How lease owners are named in the journal.
public enum LeaseName {
    /// `<node>/<incarnation>`.
    public static func owner(node: String, incarnation: String) -> String { node + "/" + incarnation }

    /// The node part of an owner; an owner written before nodes had identities (`host:pid:…`)
    /// is its own node, which never beats, so it is taken over after a lease period of watching.
    public static func node(of owner: String) -> String {
        guard let slash = owner.firstIndex(of: "/") else { return owner }
        return String(owner[..<slash])
    }

    /// What `forgetNode` writes as the owner of the attempts it releases.
    public static let released = "released"
}
