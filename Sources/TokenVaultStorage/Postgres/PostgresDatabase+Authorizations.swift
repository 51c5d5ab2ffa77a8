import NIOCore
import PostgresNIO
import TokenVaultCore

/// Pending sign-ins on PostgreSQL (`migrations/postgres/0006_authorizations.sql`): each a single
/// statement on a writer. Times are the starting node's (its `now`), the same clock that set the
/// row's expiry; a node whose clock is off shortens or lengthens a sign-in by as much.
extension PostgresDatabase: AuthorizationStore {
    public func addAuthorization(_ row: SealedAuthorization, limit: Int, now: Timestamp) async throws -> Bool {
        let uid = Int64(row.uid)
        // The prune and the count see the same snapshot, so the count leaves expired rows out
        // itself. Two sign-ins of one caller at the same moment may both pass the cap.
        return try await writers.withConnection { link in
            try await !link.query(
                """
                WITH pruned AS (DELETE FROM authorizations WHERE expires_at <= \(now.milliseconds)),
                waiting AS (
                    SELECT count(*) AS n FROM authorizations
                    WHERE uid = \(uid) AND expires_at > \(now.milliseconds))
                INSERT INTO authorizations
                    (state_key, kind, credential_id, provider, uid, created_at, expires_at, seal_term, secret, details)
                SELECT \(row.key), 'authorization_code', \(row.credentialID.description), \(row.provider), \(uid),
                    \(row.createdAt.milliseconds), \(row.expiresAt.milliseconds), \(Int64(row.sealTerm)),
                    \(ByteBuffer(bytes: row.secret)), \(ByteBuffer(bytes: row.details))
                FROM waiting WHERE waiting.n < \(Int64(limit))
                RETURNING state_key
                """
            ).rows.isEmpty
        }
    }

    public func takeAuthorization(key: String) async throws -> SealedAuthorization? {
        let rows = try await writers.withConnection { link in
            try await link.query(
                """
                DELETE FROM authorizations WHERE state_key = \(key) AND kind = 'authorization_code'
                RETURNING credential_id, provider, uid, created_at, expires_at, seal_term, secret, details
                """
            ).rows
        }
        guard let row = rows.first else { return nil }
        let (id, provider, uid, createdAt, expiresAt, term, secret, details) = try row.decode(
            (String, String, Int64, Int64, Int64, Int64, ByteBuffer, ByteBuffer).self)
        return SealedAuthorization(
            key: key, credentialID: try CredentialID(id), provider: provider, uid: UInt32(truncatingIfNeeded: uid),
            createdAt: Timestamp(milliseconds: createdAt), expiresAt: Timestamp(milliseconds: expiresAt),
            sealTerm: UInt32(truncatingIfNeeded: term), secret: Array(buffer: secret), details: Array(buffer: details))
    }
}
