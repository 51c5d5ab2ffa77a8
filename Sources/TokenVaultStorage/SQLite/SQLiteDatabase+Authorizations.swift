import TokenVaultCore

/// Pending sign-ins on SQLite (`migrations/0008_authorizations.sql`).
extension SQLiteDatabase: AuthorizationStore {
    public func addAuthorization(_ row: SealedAuthorization, limit: Int, now: Timestamp) async throws -> Bool {
        try await threads.run { [self] in
            try writeTransaction(durability: .full) { connection in
                // Device grants are left to their poller, which announces their end.
                try connection.statement(
                    "DELETE FROM authorizations WHERE expires_at <= ?1 AND kind = 'authorization_code'"
                ).bind(now.milliseconds).run()
                let waiting = try connection.statement(
                    "SELECT count(*) FROM authorizations WHERE uid = ?1"
                ).bind(Int64(row.uid))
                defer { waiting.reset() }
                guard try waiting.step(), waiting.int64(0) < Int64(limit) else { return false }
                try connection.statement(
                    """
                    INSERT INTO authorizations
                        (state_key, kind, credential_id, provider, uid, created_at, expires_at, seal_term, secret, details,
                         poll_interval, next_poll_at)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                    """
                ).bind(
                    row.key, row.kind.rawValue, row.credentialID.description, row.provider, Int64(row.uid),
                    row.createdAt.milliseconds, row.expiresAt.milliseconds, Int64(row.sealTerm), row.secret,
                    row.details, row.pollInterval.map(Int64.init), row.nextPollAt?.milliseconds
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
                guard try statement.step() else { return nil }
                return try Self.authorization(statement, key: key, kind: .authorizationCode)
            }
        }
    }

    public func claimDevicePolls(now: Timestamp, claim: String, until: Timestamp, limit: Int) async throws
        -> [SealedAuthorization]
    {
        try await threads.run { [self] in
            try writeTransaction(durability: .full) { connection in
                let statement = try connection.statement(
                    """
                    UPDATE authorizations SET claim = ?2, claimed_until = ?3
                    WHERE state_key IN (
                        SELECT state_key FROM authorizations
                        WHERE kind = 'device_code' AND next_poll_at <= ?1
                            AND (claimed_until IS NULL OR claimed_until <= ?1
                                OR (claim <> ?2 AND substr(claim, 1, length(?5)) = ?5))
                        ORDER BY next_poll_at LIMIT ?4)
                    RETURNING \(Self.deviceColumns)
                    """
                ).bind(now.milliseconds, claim, until.milliseconds, Int64(limit), LeaseName.node(of: claim) + "/")
                defer { statement.reset() }
                var rows: [SealedAuthorization] = []
                while try statement.step() { rows.append(try Self.deviceAuthorization(statement)) }
                return rows
            }
        }
    }

    public func scheduleDevicePoll(key: String, claim: String, interval: Int, at: Timestamp) async throws -> Bool {
        try await threads.run { [self] in
            try writeTransaction(durability: .full) { connection in
                try connection.statement(
                    """
                    UPDATE authorizations SET poll_interval = ?3, next_poll_at = ?4, claim = NULL, claimed_until = NULL
                    WHERE state_key = ?1 AND kind = 'device_code' AND claim = ?2
                    """
                ).bind(key, claim, Int64(interval), at.milliseconds).run()
                return connection.changes > 0
            }
        }
    }

    /// One process uses a SQLite vault: its streams heard of the end already.
    public func removeDevicePoll(key: String, ended: SignInEnd?) async throws -> Bool {
        try await threads.run { [self] in
            try writeTransaction(durability: .full) { connection in
                try connection.statement("DELETE FROM authorizations WHERE state_key = ?1 AND kind = 'device_code'")
                    .bind(key).run()
                return connection.changes > 0
            }
        }
    }

    public func waitingAuthorizations(uid: UInt32, now: Timestamp) async throws -> Int {
        try await threads.run { [self] in
            try withReader { connection in
                let statement = try connection.statement(
                    """
                    SELECT count(*) FROM authorizations
                    WHERE uid = ?1 AND (expires_at > ?2 OR kind = 'device_code')
                    """
                ).bind(Int64(uid), now.milliseconds)
                defer { statement.reset() }
                return try statement.step() ? Int(statement.int64(0)) : 0
            }
        }
    }

    public func devicePolls(for credentialID: CredentialID) async throws -> [SealedAuthorization] {
        try await threads.run { [self] in
            try withReader { connection in
                let statement = try connection.statement(
                    """
                    SELECT \(Self.deviceColumns) FROM authorizations
                    WHERE kind = 'device_code' AND credential_id = ?1 ORDER BY created_at
                    """
                ).bind(credentialID.description)
                defer { statement.reset() }
                var rows: [SealedAuthorization] = []
                while try statement.step() { rows.append(try Self.deviceAuthorization(statement)) }
                return rows
            }
        }
    }

    private static let deviceColumns =
        "credential_id, provider, uid, created_at, expires_at, seal_term, secret, details, state_key, poll_interval, "
        + "next_poll_at"

    private static func deviceAuthorization(_ statement: SQLiteStatement) throws -> SealedAuthorization {
        var row = try authorization(statement, key: statement.text(8) ?? "", kind: .deviceCode)
        row.pollInterval = Int(statement.int64(9))
        row.nextPollAt = Timestamp(milliseconds: statement.int64(10))
        return row
    }

    /// A row read as `credential_id, provider, uid, created_at, expires_at, seal_term, secret,
    /// details`, in that order.
    private static func authorization(_ statement: SQLiteStatement, key: String, kind: SealedAuthorization.Kind)
        throws -> SealedAuthorization
    {
        guard let id = statement.text(0).flatMap({ try? CredentialID($0) }) else {
            throw VaultError(code: .integrityError, message: "a pending sign-in names no valid credential")
        }
        return SealedAuthorization(
            key: key, kind: kind, credentialID: id, provider: statement.text(1) ?? "",
            uid: UInt32(truncatingIfNeeded: statement.int64(2)), createdAt: Timestamp(milliseconds: statement.int64(3)),
            expiresAt: Timestamp(milliseconds: statement.int64(4)),
            sealTerm: UInt32(truncatingIfNeeded: statement.int64(5)), secret: statement.blob(6) ?? [],
            details: statement.blob(7) ?? [])
    }

    /// Deletes every pending sign-in: a restored vault must not bring back a state spent since
    /// its backup was taken.
    public func forgetPendingSignIns() throws { try withWriter { try $0.execute("DELETE FROM authorizations") } }
}
