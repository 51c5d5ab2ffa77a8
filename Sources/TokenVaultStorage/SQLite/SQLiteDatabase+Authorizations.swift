import TokenVaultCore

/// Pending sign-ins on SQLite (`migrations/0008_authorizations.sql`).
extension SQLiteDatabase: AuthorizationStore {
    public func addAuthorization(_ row: SealedAuthorization, limit: Int, now: Timestamp) async throws -> Bool {
        try await threads.run { [self] in
            try writeTransaction(durability: .full) { connection in
                try connection.statement("DELETE FROM authorizations WHERE expires_at <= ?1").bind(now.milliseconds)
                    .run()
                let waiting = try connection.statement(
                    "SELECT count(*) FROM authorizations WHERE uid IS ?1"
                ).bind(row.uid.map(Int64.init))
                defer { waiting.reset() }
                guard try waiting.step(), waiting.int64(0) < Int64(limit) else { return false }
                try connection.statement(
                    """
                    INSERT INTO authorizations
                        (state_key, credential_id, provider, uid, created_at, expires_at, verifier, details)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                    """
                ).bind(
                    row.key, row.credentialID.description, row.provider, row.uid.map(Int64.init),
                    row.createdAt.milliseconds, row.expiresAt.milliseconds, row.verifier, row.details
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
                    DELETE FROM authorizations WHERE state_key = ?1
                    RETURNING credential_id, provider, uid, created_at, expires_at, verifier, details
                    """
                ).bind(key)
                defer { statement.reset() }
                guard try statement.step(), let id = statement.text(0).flatMap({ try? CredentialID($0) }) else {
                    return nil
                }
                return SealedAuthorization(
                    key: key, credentialID: id, provider: statement.text(1) ?? "",
                    uid: statement.optionalInt64(2).map { UInt32(truncatingIfNeeded: $0) },
                    createdAt: Timestamp(milliseconds: statement.int64(3)),
                    expiresAt: Timestamp(milliseconds: statement.int64(4)), verifier: statement.blob(5) ?? [],
                    details: statement.blob(6) ?? [])
            }
        }
    }
}
