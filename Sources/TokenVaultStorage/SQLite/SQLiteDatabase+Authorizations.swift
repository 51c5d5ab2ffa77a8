import TokenVaultCore

/// Pending sign-ins on SQLite (`migrations/0008_authorizations.sql`).
extension SQLiteDatabase: AuthorizationStore {
    public func addAuthorization(_ row: SealedAuthorization, limit: Int, now: Timestamp) async throws -> Bool {
        try await threads.run { [self] in
            try writeTransaction(durability: .full) { connection in
                try connection.statement("DELETE FROM authorizations WHERE expires_at <= ?1").bind(now.milliseconds)
                    .run()
                let waiting = try connection.statement(
                    "SELECT count(*) FROM authorizations WHERE uid = ?1"
                ).bind(Int64(row.uid))
                defer { waiting.reset() }
                guard try waiting.step(), waiting.int64(0) < Int64(limit) else { return false }
                try connection.statement(
                    """
                    INSERT INTO authorizations
                        (state_key, kind, credential_id, provider, uid, created_at, expires_at, seal_term, secret, details)
                    VALUES (?1, 'authorization_code', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                    """
                ).bind(
                    row.key, row.credentialID.description, row.provider, Int64(row.uid), row.createdAt.milliseconds,
                    row.expiresAt.milliseconds, Int64(row.sealTerm), row.secret, row.details
                ).run()
                return true
            }
        }
    }

    public func takeAuthorization(key: String) async throws -> SealedAuthorization? {
        try await threads.run { [self] in
            try writeTransaction(durability: .full) { connection in
                let statement = try connection.statement(
                    """
                    DELETE FROM authorizations WHERE state_key = ?1 AND kind = 'authorization_code'
                    RETURNING credential_id, provider, uid, created_at, expires_at, seal_term, secret, details
                    """
                ).bind(key)
                defer { statement.reset() }
                guard try statement.step(), let id = statement.text(0).flatMap({ try? CredentialID($0) }) else {
                    return nil
                }
                return SealedAuthorization(
                    key: key, credentialID: id, provider: statement.text(1) ?? "",
                    uid: UInt32(truncatingIfNeeded: statement.int64(2)),
                    createdAt: Timestamp(milliseconds: statement.int64(3)),
                    expiresAt: Timestamp(milliseconds: statement.int64(4)),
                    sealTerm: UInt32(truncatingIfNeeded: statement.int64(5)), secret: statement.blob(6) ?? [],
                    details: statement.blob(7) ?? [])
            }
        }
    }

    /// Deletes every pending sign-in: a restored vault must not bring back a state spent since
    /// its backup was taken.
    public func forgetPendingSignIns() throws { try withWriter { try $0.execute("DELETE FROM authorizations") } }
}
