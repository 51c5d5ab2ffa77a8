import NIOCore
import PostgresNIO
import TokenVaultCore

/// Pending sign-ins on PostgreSQL (`migrations/postgres/0006_authorizations.sql`): each a single
/// statement on a writer. Times are the starting node's (its `now`), the same clock that set the
/// row's expiry; a node whose clock is off shortens or lengthens a sign-in by as much.
extension PostgresDatabase: AuthorizationStore {
    public func waitingAuthorizations(uid: UInt32, now: Timestamp) async throws -> Int {
        try await withReader { reader in
            let rows = try await reader.query(
                """
                SELECT count(*) FROM authorizations
                WHERE uid = \(Int64(uid)) AND (expires_at > \(now.milliseconds) OR kind = 'device_code')
                """
            ).rows
            return Int(try rows.first?.decode(Int64.self) ?? 0)
        }
    }

    public func addAuthorization(_ row: SealedAuthorization, limit: Int, now: Timestamp) async throws -> Bool {
        let uid = Int64(row.uid)
        // The prune and the count see the same snapshot, so the count leaves expired rows out
        // itself. Two sign-ins of one caller at the same moment may both pass the cap.
        return try await writers.withConnection { link in
            try await !link.query(
                """
                WITH pruned AS (
                    DELETE FROM authorizations
                    WHERE expires_at <= \(now.milliseconds) AND kind = 'authorization_code'),
                waiting AS (
                    SELECT count(*) AS n FROM authorizations
                    WHERE uid = \(uid) AND (expires_at > \(now.milliseconds) OR kind = 'device_code'))
                INSERT INTO authorizations
                    (state_key, kind, credential_id, provider, uid, created_at, expires_at, seal_term, secret, details,
                     poll_interval, next_poll_at)
                SELECT \(row.key), \(row.kind.rawValue), \(row.credentialID.description), \(row.provider), \(uid),
                    \(row.createdAt.milliseconds), \(row.expiresAt.milliseconds), \(Int64(row.sealTerm)),
                    \(ByteBuffer(bytes: row.secret)), \(ByteBuffer(bytes: row.details)),
                    \(row.pollInterval.map(Int64.init)), \(row.nextPollAt?.milliseconds)
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

    /// `SKIP LOCKED`: two nodes claiming at once take different rows, never the same one.
    public func claimDevicePolls(now: Timestamp, claim: String, until: Timestamp, limit: Int) async throws
        -> [SealedAuthorization]
    {
        // An earlier run of this node held it: that run is gone (one daemon per data directory).
        let earlier = LeaseName.node(of: claim) + "/"
        let rows = try await writers.withConnection { link in
            try await link.query(
                """
                UPDATE authorizations SET claim = \(claim), claimed_until = \(until.milliseconds)
                WHERE state_key IN (
                    SELECT state_key FROM authorizations
                    WHERE kind = 'device_code' AND next_poll_at <= \(now.milliseconds)
                        AND (claimed_until IS NULL OR claimed_until <= \(now.milliseconds)
                            OR (claim <> \(claim) AND left(claim, length(\(earlier))) = \(earlier)))
                    ORDER BY next_poll_at LIMIT \(Int64(limit))
                    FOR UPDATE SKIP LOCKED)
                RETURNING \(unescaped: Self.deviceColumns)
                """
            ).rows
        }
        return try rows.map(Self.deviceAuthorization)
    }

    public func scheduleDevicePoll(key: String, claim: String, interval: Int, at: Timestamp) async throws -> Bool {
        try await writers.withConnection { link in
            try await !link.query(
                """
                UPDATE authorizations
                SET poll_interval = \(Int64(interval)), next_poll_at = \(at.milliseconds), claim = NULL,
                    claimed_until = NULL
                WHERE state_key = \(key) AND kind = 'device_code' AND claim = \(claim)
                RETURNING state_key
                """
            ).rows.isEmpty
        }
    }

    /// With an end, the removal records it in the change feed in the same statement, which
    /// announces it as it announces a row's change (`0010_sign_in_ends.sql`): the other nodes'
    /// event streams announce it.
    public func removeDevicePoll(key: String, ended: SignInEnd?) async throws -> Bool {
        try await writers.withConnection { link in
            guard let ended else {
                return try await !link.query(
                    "DELETE FROM authorizations WHERE state_key = \(key) AND kind = 'device_code' RETURNING state_key"
                ).rows.isEmpty
            }
            let code = ended.feedCode
            return try await !link.query(
                """
                WITH gone AS (
                    DELETE FROM authorizations WHERE state_key = \(key) AND kind = 'device_code'
                    RETURNING credential_id),
                noted AS (
                    INSERT INTO credential_changes (op, credential_id, new_status, failed, node, at)
                    SELECT 'sign_in_ended', credential_id, \(code), false, current_setting('tokenvault.node', true),
                        \(unescaped: PostgresDatabase.clockMilliseconds)
                    FROM gone
                    RETURNING seq)
                SELECT seq FROM noted
                """
            ).rows.isEmpty
        }
    }

    public func devicePolls(for credentialID: CredentialID) async throws -> [SealedAuthorization] {
        let rows = try await withReader { reader in
            try await reader.query(
                """
                SELECT \(unescaped: Self.deviceColumns) FROM authorizations
                WHERE kind = 'device_code' AND credential_id = \(credentialID.description) ORDER BY created_at
                """
            ).rows
        }
        return try rows.map(Self.deviceAuthorization)
    }

    private static let deviceColumns =
        "credential_id, provider, uid, created_at, expires_at, seal_term, secret, details, state_key, poll_interval, "
        + "next_poll_at"

    private static func deviceAuthorization(_ row: PostgresRow) throws -> SealedAuthorization {
        let (id, provider, uid, createdAt, expiresAt, term, secret, details, key, interval, nextPollAt) =
            try row.decode(
                (String, String, Int64, Int64, Int64, Int64, ByteBuffer, ByteBuffer, String, Int64, Int64).self)
        return SealedAuthorization(
            key: key, kind: .deviceCode, credentialID: try CredentialID(id), provider: provider,
            uid: UInt32(truncatingIfNeeded: uid), createdAt: Timestamp(milliseconds: createdAt),
            expiresAt: Timestamp(milliseconds: expiresAt), sealTerm: UInt32(truncatingIfNeeded: term),
            secret: Array(buffer: secret), details: Array(buffer: details), pollInterval: Int(interval),
            nextPollAt: Timestamp(milliseconds: nextPollAt))
    }
}
