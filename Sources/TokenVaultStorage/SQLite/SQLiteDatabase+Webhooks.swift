import TokenVaultCore

/// The webhook outbox on SQLite (`migrations/0006_webhook_outbox.sql`). One process writes the
/// file, so its clock is the database's; claims still fence, so a delivery that outlived its
/// claim (the process paused past it) cannot undo a later attempt's outcome.
extension SQLiteDatabase: WebhookOutbox {
    public func claimWebhookDeliveries(owner: String, endpoints: [String], leaseSeconds: Double, limit: Int)
        async throws
        -> [WebhookDelivery]
    {
        try await threads.run { [self] in
            guard !endpoints.isEmpty, limit > 0 else { return [] }
            let now = clock.now
            let claim = WebhookSQL.newClaim(owner)
            return try writeTransaction(durability: .normal) { connection in
                let statement = try connection.statement(
                    """
                    UPDATE webhook_deliveries SET claim = ?1, claimed_until = ?2
                    WHERE id IN (
                        SELECT d.id FROM webhook_deliveries d INDEXED BY webhook_deliveries_due
                        WHERE d.state = 'pending' AND d.next_attempt_at <= ?3
                          AND (d.claimed_until IS NULL OR d.claimed_until <= ?3)
                          AND d.endpoint IN (\(endpoints.indices.map { "?\($0 + 5)" }.joined(separator: ", ")))
                          AND NOT EXISTS (
                              SELECT 1 FROM webhook_deliveries e INDEXED BY webhook_deliveries_order
                              WHERE e.state = 'pending' AND e.endpoint = d.endpoint
                                AND e.credential_id = d.credential_id AND e.id < d.id)
                        ORDER BY d.id LIMIT ?4)
                    RETURNING \(WebhookSQL.columns)
                    """)
                try statement.bind(
                    claim, now.adding(seconds: leaseSeconds).milliseconds, now.milliseconds, Int64(limit))
                for (index, endpoint) in endpoints.enumerated() { try statement.bind(at: Int32(index + 5), endpoint) }
                return try Self.deliveries(from: statement).sorted { $0.id < $1.id }
            }
        }
    }

    public func releaseWebhookClaims(owner: String) async throws -> Int {
        try await threads.run { [self] in
            try writeTransaction(durability: .normal) { connection in
                try connection.statement(
                    "UPDATE webhook_deliveries SET claim = NULL, claimed_until = NULL WHERE substr(claim, 1, ?2) = ?1"
                ).bind(WebhookSQL.claimPrefix(owner), Int64(WebhookSQL.claimPrefix(owner).utf8.count)).run()
                return connection.changes
            }
        }
    }

    public func finishWebhookDelivery(id: Int64, claim: String) async throws -> Bool {
        try await threads.run { [self] in
            try writeTransaction(durability: .normal) { connection in
                try connection.statement("DELETE FROM webhook_deliveries WHERE id = ?1 AND claim = ?2").bind(id, claim)
                    .run()
                return connection.changes == 1
            }
        }
    }

    public func failWebhookDelivery(id: Int64, claim: String, error: String, retryAfterSeconds: Double?) async throws
        -> Bool
    {
        try await threads.run { [self] in
            let now = clock.now
            return try writeTransaction(durability: .normal) { connection in
                try connection.statement(
                    """
                    UPDATE webhook_deliveries
                    SET attempts = attempts + 1, last_error = ?3, claim = NULL, claimed_until = NULL,
                        state = CASE WHEN ?4 IS NULL THEN 'failed' ELSE 'pending' END,
                        next_attempt_at = COALESCE(?4, next_attempt_at)
                    WHERE id = ?1 AND claim = ?2
                    """
                ).bind(id, claim, error, retryAfterSeconds.map { now.adding(seconds: $0).milliseconds }).run()
                return connection.changes == 1
            }
        }
    }

    public func webhookDeliveries(state: WebhookDelivery.State?, after: Int64?, limit: Int) async throws
        -> [WebhookDelivery]
    {
        try await threads.run { [self] in
            try withReader { connection in
                let statement = try connection.statement(
                    """
                    SELECT \(WebhookSQL.columns) FROM webhook_deliveries
                    WHERE (?1 IS NULL OR state = ?1) AND id > ?2 ORDER BY id LIMIT ?3
                    """)
                try statement.bind(state?.rawValue, after ?? 0, Int64(max(0, limit)))
                return try Self.deliveries(from: statement)
            }
        }
    }

    public func redeliverWebhooks(ids: [Int64]?) async throws -> Int {
        try await threads.run { [self] in
            let now = clock.now
            return try writeTransaction(durability: .full) { connection in
                let statement = try connection.statement(
                    """
                    UPDATE webhook_deliveries
                    SET state = 'pending', attempts = 0, next_attempt_at = ?1, claim = NULL, claimed_until = NULL
                    WHERE state = 'failed' AND (?2 IS NULL OR id = ?2)
                    """)
                guard let ids else {
                    try statement.bind(now.milliseconds, nil as Int64?).run()
                    return connection.changes
                }
                var count = 0
                for id in ids {
                    statement.reset()
                    try statement.bind(now.milliseconds, id).run()
                    count += connection.changes
                }
                return count
            }
        }
    }

    private static func deliveries(from statement: SQLiteStatement) throws -> [WebhookDelivery] {
        defer { statement.reset() }
        var rows: [WebhookDelivery] = []
        while try statement.step() {
            rows.append(
                WebhookDelivery(
                    id: statement.int64(0), endpoint: statement.text(1) ?? "", messageID: statement.text(2) ?? "",
                    kind: statement.text(3) ?? "", credentialID: statement.text(4).flatMap { try? CredentialID($0) },
                    payload: Array((statement.text(5) ?? "").utf8),
                    createdAt: Timestamp(milliseconds: statement.int64(6)),
                    state: WebhookDelivery.State(rawValue: statement.text(7) ?? "") ?? .pending,
                    attempts: Int(statement.int64(8)), nextAttemptAt: Timestamp(milliseconds: statement.int64(9)),
                    lastError: statement.text(10), claim: statement.text(11), traceparent: statement.text(12)))
        }
        return rows
    }
}

extension SQLiteCredentialWriter {
    func insertWebhookDeliveries(_ rows: [NewWebhookDelivery]) async throws {
        let statement = try connection.statement(
            """
            INSERT INTO webhook_deliveries
                (endpoint, message_id, type, credential_id, payload, created_at, delayed, next_attempt_at, traceparent)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
            ON CONFLICT (endpoint, message_id) DO NOTHING
            """)
        let now = clock.now
        for row in rows {
            statement.reset()
            try statement.bind(
                row.endpoint, row.messageID, row.kind, row.credentialID?.description,
                String(decoding: row.payload, as: UTF8.self), now.milliseconds, Int64(row.delaySeconds > 0 ? 1 : 0),
                now.adding(seconds: row.delaySeconds).milliseconds, row.traceparent
            ).run()
        }
    }

    func cancelDelayedWebhooks(for id: CredentialID, endpoint: String?) async throws -> Set<String> {
        let statement = try connection.statement(
            """
            DELETE FROM webhook_deliveries INDEXED BY webhook_deliveries_delayed
            WHERE credential_id = ?1 AND delayed = 1 AND state = 'pending' AND attempts = 0 AND claim IS NULL
              AND next_attempt_at > ?2 AND (?3 IS NULL OR endpoint = ?3)
            RETURNING endpoint
            """)
        defer { statement.reset() }
        try statement.bind(id.description, clock.now.milliseconds, endpoint)
        var endpoints: Set<String> = []
        while try statement.step() { endpoints.insert(statement.text(0) ?? "") }
        return endpoints
    }
}

/// What both backends share about the outbox.
enum WebhookSQL {
    private static let names = [
        "id", "endpoint", "message_id", "type", "credential_id", "payload", "created_at", "state", "attempts",
        "next_attempt_at", "last_error", "claim", "traceparent",
    ]
    /// The columns a `WebhookDelivery` is read from, in order.
    static let columns = names.joined(separator: ", ")

    /// `columns`, each qualified with a table's alias.
    static func columns(of alias: String) -> String { names.map { "\(alias).\($0)" }.joined(separator: ", ") }

    /// A claim's name: its owner's, then random, so a claim that lapsed and was taken again is
    /// told apart, and an owner starting again finds its own.
    static func newClaim(_ owner: String) -> String {
        var generator = SystemRandomNumberGenerator()
        return claimPrefix(owner) + String(generator.next() as UInt64, radix: 16)
            + String(generator.next() as UInt64, radix: 16)
    }

    static func claimPrefix(_ owner: String) -> String { owner + "/" }

}
