import TokenVaultCore

/// Decides when another node has been silent long enough that its refresh attempts may be
/// taken over: only when this node itself watched that node's beat counter stand still for a
/// whole lease period, in readings of its own heartbeats that followed one another closely
/// (this node connected and running throughout). Pure: fed the readings, asked about nodes.
///
/// What is not silence: a database that was down or unreachable (this node's beats failed, so
/// it watched nothing), this node paused or cut off (its readings are too far apart), a
/// reading that shows the counter moved. After any of those the watch starts over, so every
/// owner gets a whole lease period to renew and commit what it holds first.
public struct SilenceWatch: Sendable {
    /// How long a counter must stand still, in the database's time.
    public let period: Double
    /// Readings further apart than this (database time) break the watch: this node was not
    /// watching in between.
    public let maximumGap: Double

    private var lastReading: Timestamp?
    /// Per node: the counter last seen (nil: no row) and the reading since which it has stood still.
    private var watched: [String: (beat: Int64?, since: Timestamp)] = [:]

    public init(period: Double, maximumGap: Double) {
        self.period = period
        self.maximumGap = maximumGap
    }

    /// A reading from this node's heartbeat.
    public mutating func observe(_ reading: HeartbeatReading) {
        let now = reading.databaseNow
        if let last = lastReading, now.seconds - last.seconds > maximumGap || now < last {
            watched = [:]
        }
        lastReading = now
        var beats: [String: Int64] = [:]
        for node in reading.nodes { beats[node.node] = node.beat }
        for (node, seen) in watched where beats[node] == nil && seen.beat != nil {
            watched[node] = (nil, now)  // its row was removed: absent from now on
        }
        for (node, beat) in beats {
            if let seen = watched[node], seen.beat == beat { continue }
            watched[node] = (beat, now)
        }
    }

    /// This node's own beat failed: it is not watching until the next reading.
    public mutating func lostContact() {
        lastReading = nil
        watched = [:]
    }

    /// What this node has heard of another.
    public enum Verdict: Sendable, Equatable {
        /// Its counter moved within the period, or this node has not watched it long enough.
        case heard
        /// Its counter stood at `beat` (nil: it had no row) for a whole period. A takeover
        /// checks, inside its own transaction, that the counter still has that value.
        case silent(beat: Int64?)
    }

    /// The verdict on `node`. A node never seen is watched as absent from now on.
    public mutating func verdict(on node: String) -> Verdict {
        guard let now = lastReading else { return .heard }
        guard let seen = watched[node] else {
            watched[node] = (nil, now)
            return period <= 0 ? .silent(beat: nil) : .heard
        }
        return now.seconds - seen.since.seconds >= period ? .silent(beat: seen.beat) : .heard
    }
}
