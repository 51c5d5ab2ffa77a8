import PostgresNIO
import TokenVaultCore

/// The webhook outbox on PostgreSQL (`migrations/postgres/0005_webhook_outbox.sql`). Each
/// statement runs alone on a writer connection; every time is the database's, so nodes whose
/// clocks disagree still deliver each row once, in order. Rows another node is claiming are
/// skipped (`SKIP LOCKED`), never waited for.
extension PostgresDatabase: WebhookOutbox {
    public func claimWebhookDeliveries(owner: String, endpoints: [String], leaseSeconds: Double, limit: Int)
        async throws
        -> [WebhookDelivery]
    {
        guard !endpoints.isEmpty, limit > 0 else { return [] }
        let claim = WebhookSQL.newClaim(owner)
        let lease = Int64(leaseSeconds * 1000)
        let rows = try await writers.withConnection { link in
            try await link.query(
                """
                WITH clock AS (SELECT \(unescaped: PostgresDatabase.clockMilliseconds) AS ms),
                picked AS (
                    SELECT d.id FROM webhook_deliveries d, clock
                    WHERE d.state = 'pending' AND d.next_attempt_at <= clock.ms
                      AND (d.claimed_until IS NULL OR d.claimed_until <= clock.ms)
                      AND d.endpoint = ANY(\(endpoints))
                      AND NOT EXISTS (
                          SELECT 1 FROM webhook_deliveries e
                          WHERE e.state = 'pending' AND e.endpoint = d.endpoint
                            AND e.credential_id = d.credential_id AND e.id < d.id)
                    ORDER BY d.id LIMIT \(Int64(limit))
                    FOR UPDATE OF d SKIP LOCKED)
                UPDATE webhook_deliveries w SET claim = \(claim), claimed_until = clock.ms + \(lease)
                FROM picked, clock WHERE w.id = picked.id
                RETURNING \(unescaped: WebhookSQL.columns(of: "w"))
                """
            ).rows
        }
        return try rows.map(Self.delivery).sorted { $0.id < $1.id }
    }

    public func releaseWebhookClaims(owner: String) async throws -> Int {
        let prefix = WebhookSQL.claimPrefix(owner)
        return try await writers.withConnection { link in
            try await link.query(
                """
                UPDATE webhook_deliveries SET claim = NULL, claimed_until = NULL
                WHERE left(claim, \(Int32(prefix.count))) = \(prefix) RETURNING id
                """
            ).rows.count
        }
    }

    public func finishWebhookDelivery(id: Int64, claim: String) async throws -> Bool {
        try await writers.withConnection { link in
            try await !link.query("DELETE FROM webhook_deliveries WHERE id = \(id) AND claim = \(claim) RETURNING id")
                .rows
                .isEmpty
        }
    }

    public func failWebhookDelivery(id: Int64, claim: String, error: String, retryAfterSeconds: Double?) async throws
        -> Bool
    {
        let delay = retryAfterSeconds.map { Int64($0 * 1000) }
        return try await writers.withConnection { link in
            try await !link.query(
                """
                UPDATE webhook_deliveries
                SET attempts = attempts + 1, last_error = \(error), claim = NULL, claimed_until = NULL,
                    state = CASE WHEN \(delay)::BIGINT IS NULL THEN 'failed' ELSE 'pending' END,
                    next_attempt_at = COALESCE(
                        \(unescaped: PostgresDatabase.clockMilliseconds) + \(delay)::BIGINT, next_attempt_at)
                WHERE id = \(id) AND claim = \(claim)
                RETURNING id
                """
            ).rows.isEmpty
        }
    }

    public func webhookDeliveries(state: WebhookDelivery.State?, after: Int64?, limit: Int) async throws
        -> [WebhookDelivery]
    {
        try await withReader { reader in
            try await reader.query(
                """
                SELECT \(unescaped: WebhookSQL.columns) FROM webhook_deliveries
                WHERE (\(state?.rawValue)::TEXT IS NULL OR state = \(state?.rawValue)::TEXT) AND id > \(after ?? 0)
                ORDER BY id LIMIT \(Int64(max(0, limit)))
                """
            ).rows.map(Self.delivery)
        }
    }

    public func redeliverWebhooks(ids: [Int64]?) async throws -> Int {
        try await writers.withConnection { link in
            try await link.query(
                """
                UPDATE webhook_deliveries
                SET state = 'pending', attempts = 0, claim = NULL, claimed_until = NULL,
                    next_attempt_at = \(unescaped: PostgresDatabase.clockMilliseconds)
                WHERE state = 'failed' AND (\(ids == nil) OR id = ANY(\(ids ?? [])))
                RETURNING id
                """
            ).rows.count
        }
    }

    private static func delivery(_ row: PostgresRow) throws -> WebhookDelivery {
        let (
            id, endpoint, messageID, kind, credential, payload, createdAt, state, attempts, nextAttemptAt, lastError,
            claim, traceparent
        ) =
            try row.decode(
                (Int64, String, String, String, String?, String, Int64, String, Int32, Int64, String?, String?, String?)
                    .self)
        return WebhookDelivery(
            id: id, endpoint: endpoint, messageID: messageID, kind: kind,
            credentialID: credential.flatMap { try? CredentialID($0) }, payload: Array(payload.utf8),
            createdAt: Timestamp(milliseconds: createdAt), state: WebhookDelivery.State(rawValue: state) ?? .pending,
            attempts: Int(attempts), nextAttemptAt: Timestamp(milliseconds: nextAttemptAt), lastError: lastError,
            claim: claim, traceparent: traceparent)
    }
}

extension PostgresCredentialWriter {
    func insertWebhookDeliveries(_ rows: [NewWebhookDelivery]) async throws {
        for row in rows {
            let delay = Int64(row.delaySeconds * 1000)
            try await change(
                """
                INSERT INTO webhook_deliveries
                    (endpoint, message_id, type, credential_id, payload, created_at, delayed, next_attempt_at,
                     traceparent)
                SELECT \(row.endpoint), \(row.messageID), \(row.kind), \(row.credentialID?.description),
                       \(String(decoding: row.payload, as: UTF8.self)), ms, \(row.delaySeconds > 0), ms + \(delay),
                       \(row.traceparent)
                FROM (SELECT \(unescaped: PostgresDatabase.clockMilliseconds) AS ms) AS clock
                ON CONFLICT (endpoint, message_id) DO NOTHING
                """)
        }
    }

    func cancelDelayedWebhooks(for id: CredentialID, endpoint: String?) async throws -> Set<String> {
        await Set(
            try change(
                """
                DELETE FROM webhook_deliveries
                WHERE credential_id = \(id.description) AND delayed AND state = 'pending' AND attempts = 0
                  AND claim IS NULL AND next_attempt_at > \(unescaped: PostgresDatabase.clockMilliseconds)
                  AND (\(endpoint)::TEXT IS NULL OR endpoint = \(endpoint)::TEXT)
                RETURNING endpoint
                """
            ).rows.map { try $0.decode(String.self) })
    }
}
