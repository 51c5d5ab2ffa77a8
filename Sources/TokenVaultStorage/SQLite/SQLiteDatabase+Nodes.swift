import TokenVaultCore

/// Node heartbeats and stored answers' keys on SQLite (`migrations/0004_node_heartbeats.sql`). One host owns the file, so
/// the database's clock is this host's (`clock`).
extension SQLiteDatabase: NodeRegistry {
    public func heartbeat(_ beat: NodeBeat) async throws -> HeartbeatReading {
        try await threads.run { [self] in
            let now = clock.now
            return try writeTransaction(durability: .normal) { connection in
                try connection.statement(NodeSQL.sqliteBeat).bind(
                    beat.node, beat.incarnation, now.milliseconds, beat.host, beat.pid
                ).run()
                return HeartbeatReading(databaseNow: now, nodes: try Self.nodes(on: connection))
            }
        }
    }

    public func nodes() async throws -> [NodeRecord] {
        try await threads.run { [self] in
            try withReader { try Self.nodes(on: $0) }
        }
    }

    public func forgetNode(_ node: String) async throws -> Int? {
        try await threads.run { [self] in
            try writeTransaction(durability: .full) { connection in
                try connection.statement("DELETE FROM nodes WHERE node = ?1").bind(node).run()
                let removed = connection.changes
                try connection.statement(
                    """
                    UPDATE refresh_attempts SET lease_owner = ?2
                    WHERE state = 'open' AND (lease_owner = ?1 OR lease_owner LIKE ?3 ESCAPE '\\')
                    """
                ).bind(node, LeaseName.released, NodeSQL.ownerPattern(node)).run()
                let released = connection.changes
                return removed == 0 && released == 0 ? nil : released
            }
        }
    }

    private static func nodes(on connection: SQLiteConnection) throws -> [NodeRecord] {
        let statement = try connection.statement("SELECT \(NodeSQL.columns) FROM nodes ORDER BY node")
        var nodes: [NodeRecord] = []
        while try statement.step() {
            nodes.append(
                NodeRecord(
                    node: statement.text(0) ?? "", incarnation: statement.text(1) ?? "", beat: statement.int64(2),
                    beatAt: Timestamp(milliseconds: statement.int64(3)),
                    startedAt: Timestamp(milliseconds: statement.int64(4)), host: statement.text(5) ?? "",
                    pid: statement.int64(6)))
        }
        return nodes
    }
}

extension SQLiteDatabase {
    public func isAnswerStored(_ callKey: String) async throws -> Bool {
        try await threads.run { [self] in
            try withReader { connection in
                let statement = try connection.statement("SELECT 1 FROM received_answers WHERE call_key = ?1")
                try statement.bind(callKey)
                defer { statement.reset() }
                return try statement.step()
            }
        }
    }
}

extension SQLiteCredentialWriter {
    func recordReceivedAnswer(_ callKey: String, credentialID: CredentialID, at: Timestamp) async throws {
        try connection.statement(
            "INSERT OR IGNORE INTO received_answers (call_key, credential_id, stored_at) VALUES (?1, ?2, ?3)"
        ).bind(callKey, credentialID.description, at.milliseconds).run()
    }

    func nodeBeat(_ node: String) async throws -> Int64? {
        let statement = try connection.statement("SELECT beat FROM nodes WHERE node = ?1")
        try statement.bind(node)
        defer { statement.reset() }
        return try statement.step() ? statement.int64(0) : nil
    }
}

/// The statements both backends share about nodes.
enum NodeSQL {
    static let columns = "node, incarnation, beat, beat_at, started_at, host, pid"

    /// A new node's first beat, or the next beat of a known one (a new incarnation restarts
    /// `started_at`). In SQLite's upsert a bare column is the stored row's.
    static let sqliteBeat = """
        INSERT INTO nodes (\(columns)) VALUES (?1, ?2, 1, ?3, ?3, ?4, ?5)
        ON CONFLICT (node) DO UPDATE SET beat = beat + 1, beat_at = excluded.beat_at,
            started_at = CASE WHEN incarnation = excluded.incarnation THEN started_at ELSE excluded.started_at END,
            incarnation = excluded.incarnation, host = excluded.host, pid = excluded.pid
        """

    /// `LIKE` pattern of every owner name of `node` (`<node>/<incarnation>`), with `\` escaping.
    static func ownerPattern(_ node: String) -> String {
        var escaped = ""
        for character in node {
            if character == "%" || character == "_" || character == "\\" { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped + "/%"
    }
}
