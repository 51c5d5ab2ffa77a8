import PostgresNIO
import TokenVaultCore

/// Node heartbeats and stored answers' keys on PostgreSQL (`migrations/postgres/0003_node_heartbeats.sql`). A beat is one
/// statement on a connection of its own, so it never waits behind the node's queue of writes (a
/// loaded node must not look silent), and its time is the database's `clock_timestamp()`.
extension PostgresDatabase: NodeRegistry {
    /// Renews this node's row and reads every other node's, as of the same moment.
    private static func beat(_ beat: NodeBeat) -> PostgresQuery {
        """
        WITH clock AS (SELECT \(unescaped: PostgresDatabase.clockMilliseconds) AS ms,
                              (SELECT count(*) FROM pg_stat_replication) AS standbys,
                              current_setting('synchronous_standby_names') AS standby_names,
                              current_setting('synchronous_commit') AS synchronous_commit),
        mine AS (
            INSERT INTO nodes (\(unescaped: columns))
            SELECT \(beat.node), \(beat.incarnation), 1, ms, ms, \(beat.host), \(beat.pid),
                \(beat.clockOffset.map { Int64(($0 * 1000).rounded()) })::BIGINT, \(beat.reconciledTimeline)::BIGINT
            FROM clock
            ON CONFLICT (node) DO UPDATE SET beat = nodes.beat + 1, beat_at = excluded.beat_at,
                started_at = CASE WHEN nodes.incarnation = excluded.incarnation THEN nodes.started_at
                                  ELSE excluded.started_at END,
                incarnation = excluded.incarnation, host = excluded.host, pid = excluded.pid,
                clock_offset_ms = excluded.clock_offset_ms, reconciled_timeline = excluded.reconciled_timeline
            RETURNING \(unescaped: columns))
        SELECT \(unescaped: columns), ms AS now, standbys, standby_names, synchronous_commit FROM mine, clock
        UNION ALL
        SELECT \(unescaped: columns), ms AS now, standbys, standby_names, synchronous_commit
        FROM nodes, clock WHERE node <> \(beat.node)
        """
    }

    public func heartbeat(_ beat: NodeBeat) async throws -> HeartbeatReading {
        let (rows, timeline) = try await heartbeats.withConnection { link in
            (try await link.query(Self.beat(beat)).rows, try await timelines.read(on: link))
        }
        let columns = rows.map { $0.makeRandomAccess() }
        var reading = HeartbeatReading(databaseNow: Timestamp(milliseconds: 0), nodes: try columns.map(Self.node))
        // The clock and the replication settings are the same on every row: read once.
        if let first = columns.first {
            reading.databaseNow = Timestamp(milliseconds: try first["now"].decode(Int64.self))
            let seen = ReplicationStatus(
                standbys: Int(try first["standbys"].decode(Int64.self)),
                standbyNames: try first["standby_names"].decode(String.self),
                synchronousCommit: try first["synchronous_commit"].decode(String.self))
            replicationSeen.withLock { $0 = seen }
        }
        reading.timeline = timeline
        return reading
    }

    public func nodes() async throws -> [NodeRecord] {
        try await withReader { reader in
            try await reader.query("SELECT \(unescaped: Self.columns) FROM nodes ORDER BY node").rows.map {
                try Self.node($0.makeRandomAccess())
            }
        }
    }

    /// One statement: the row goes and the attempts are released together.
    public func forgetNode(_ node: String) async throws -> Int? {
        let writer = await writers.take()
        defer { writers.giveBack(writer) }
        let counts = try await writer.query(
            """
            WITH gone AS (DELETE FROM nodes WHERE node = \(node) RETURNING node),
            released AS (
                UPDATE refresh_attempts SET lease_owner = \(LeaseName.released)
                WHERE state = 'open' AND (lease_owner = \(node) OR lease_owner LIKE \(NodeSQL.ownerPattern(node)) ESCAPE '\\')
                RETURNING attempt_id)
            SELECT (SELECT count(*) FROM gone) AS removed, (SELECT count(*) FROM released) AS released
            """
        ).rows.first?.makeRandomAccess()
        let removed = try counts?["removed"].decode(Int64.self) ?? 0
        let released = try counts?["released"].decode(Int64.self) ?? 0
        return removed == 0 && released == 0 ? nil : Int(released)
    }

    private static func node(_ row: PostgresRandomAccessRow) throws -> NodeRecord {
        NodeRecord(
            node: try row["node"].decode(String.self), incarnation: try row["incarnation"].decode(String.self),
            beat: try row["beat"].decode(Int64.self),
            beatAt: Timestamp(milliseconds: try row["beat_at"].decode(Int64.self)),
            startedAt: Timestamp(milliseconds: try row["started_at"].decode(Int64.self)),
            host: try row["host"].decode(String.self), pid: try row["pid"].decode(Int64.self),
            clockOffset: try row["clock_offset_ms"].decode(Int64?.self).map { Double($0) / 1000 },
            reconciledTimeline: try row["reconciled_timeline"].decode(Int64?.self))
    }

    /// SQLite's columns, the clock offset each node reports (`0007_node_clock_offsets.sql`) and
    /// the timeline it reconciled (`0009_node_reconciled_timelines.sql`).
    private static let columns = NodeSQL.columns + ", clock_offset_ms, reconciled_timeline"
}

extension PostgresDatabase {
    public func isAnswerStored(_ callKey: String) async throws -> Bool {
        try await withReader {
            try await !$0.query("SELECT 1 FROM received_answers WHERE call_key = \(callKey)").rows.isEmpty
        }
    }
}

extension PostgresCredentialWriter {
    /// Stamped with the database's clock, which the pruning reads too (`at` is this node's).
    func recordReceivedAnswer(_ callKey: String, credentialID: CredentialID, at: Timestamp) async throws {
        try await change(
            """
            INSERT INTO received_answers (call_key, credential_id, stored_at)
            VALUES (\(callKey), \(credentialID.description), \(unescaped: PostgresDatabase.clockMilliseconds))
            ON CONFLICT DO NOTHING
            """)
    }

    /// Read once per transaction (the journalling and a held commit ask).
    func timeline() async throws -> Int64? {
        if let timeline = seenTimeline { return timeline }
        seenTimeline = try await timelines.read(in: self)
        return seenTimeline
    }

    func isAttemptRecorded(_ attemptID: String) async throws -> Bool {
        try await !run("SELECT 1 FROM refresh_attempts WHERE attempt_id = \(attemptID)").rows.isEmpty
    }

    func nodeBeat(_ node: String) async throws -> Int64? {
        try await run("SELECT beat FROM nodes WHERE node = \(node)").rows.first.map { try $0.decode(Int64.self) }
    }
}
