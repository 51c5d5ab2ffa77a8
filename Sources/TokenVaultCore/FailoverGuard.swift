import Synchronization

/// Whether this node may present refresh tokens after the database's timeline changed.
///
/// A PostgreSQL standby promoted after the primary died may lack the primary's last commits: the
/// rotated refresh tokens they held are spent at the provider, and the rows hold the tokens they
/// replaced. Every node keeps its recent commits on its own disk (`AnswerRetention`). When a
/// heartbeat finds the database on a timeline this node has not reconciled, the node re-applies
/// what it kept that the database lacks, and reports the timeline as reconciled in its heartbeat.
/// Until every node that beat within a lease period has reconciled, no node journals a refresh
/// (it would present a token that another node's kept answer replaced), and a commit that finds
/// the database behind the attempt it answers waits for the same moment.
///
/// The timeline, not a position in the WAL, because a promotion always starts a new one and a
/// timeline never goes back, while positions on the new timeline move past the old ones within
/// moments. A database without timelines (SQLite) is never held.
public final class FailoverGuard: Sendable {
    private struct State {
        /// The database's timeline at the last beat; nil before one, and on SQLite.
        var current: Int64?
        /// The timeline this node has re-applied its kept commits for.
        var reconciled: Int64?
        /// Nodes that beat within a lease period and have not reconciled `current` yet.
        var waitingFor: [String] = []
        /// A daemon on PostgreSQL holds; a vault used alone (tools, tests) never does.
        var armed = false
    }

    private let state = Mutex(State())

    public init() {}

    /// Makes the guard hold until this node has reconciled the timeline its transactions see:
    /// a daemon with a heartbeat on a shared database calls this before it starts.
    public func arm() { state.withLock { $0.armed = true } }

    /// Whether the guard may hold (`arm`): only then do transactions read the timeline.
    public var isArmed: Bool { state.withLock { $0.armed } }

    /// The timeline the heartbeat reports as this node's reconciled one.
    public var reconciledTimeline: Int64? { state.withLock { $0.reconciled } }

    /// The database's timeline at the last beat.
    public var currentTimeline: Int64? { state.withLock { $0.current } }

    /// The other nodes the cluster waits for, by name.
    public var waitingFor: [String] { state.withLock { $0.waitingFor } }

    /// Takes a beat's reading: the timeline, and which live nodes (beat within `period` seconds
    /// of the database's time) have not reconciled it. Returns true when this node must reconcile.
    public func observe(_ reading: HeartbeatReading, node: String, period: Double) -> Bool {
        state.withLock { state in
            state.current = reading.timeline
            guard let timeline = reading.timeline else {
                state.waitingFor = []
                return false
            }
            let liveSince = reading.databaseNow.adding(seconds: -period)
            // A node that never reported a timeline (a daemon of an older version, or one whose
            // first reconciliation is still under way) is not waited for.
            state.waitingFor = reading.nodes.filter {
                $0.node != node && $0.beatAt >= liveSince && $0.reconciledTimeline.map { $0 != timeline } ?? false
            }.map(\.node).sorted()
            return state.reconciled != timeline
        }
    }

    /// This node re-applied what it kept, as of `timeline`.
    public func reconciled(_ timeline: Int64) {
        state.withLock { $0.reconciled = timeline }
    }

    /// Why no refresh may be journalled now, or nil. `timeline` is the one the transaction sees
    /// (nil: not read; then the last beat's).
    public func refusal(seeing timeline: Int64? = nil) -> VaultError? {
        state.withLock { state in
            guard state.armed, let current = timeline ?? state.current else { return nil }
            if state.reconciled != current {
                return VaultError.storageUnavailable(
                    "the database is on timeline \(current), which this node has not reconciled yet (a failover: "
                        + "it re-applies the commits it keeps first); refreshes wait")
            }
            guard state.waitingFor.isEmpty else {
                return VaultError.storageUnavailable(
                    "the database failed over to timeline \(current); refreshes wait until every node has re-applied "
                        + "the commits it keeps (waiting for \(state.waitingFor.joined(separator: ", ")))")
            }
            return nil
        }
    }
}
