import TokenVaultCore

/// The refresh scheduler's reads: all through indexes (`credentials_refresh_due`,
/// `refresh_attempts_one_open`, `refresh_attempts_finished`), never a full scan.
extension SQLiteDatabase: RefreshJournal {
    /// Reads `skipping.count` rows more and leaves those out: the file is in this process, so
    /// reading a row costs little, and the statement stays the same.
    public func dueCredentials(at now: Timestamp, limit: Int, skipping: Set<CredentialID>) async throws
        -> [ScheduledCredential]
    {
        try await threads.run { [self] in
            try withReader { connection in
                let statement = try connection.statement(
                    """
                    SELECT id, refresh_at, status FROM credentials INDEXED BY credentials_refresh_due
                    WHERE refresh_at IS NOT NULL AND refresh_at <= ?1 ORDER BY refresh_at LIMIT ?2
                    """)
                // Reset on the way out: a statement left part-way holds its read snapshot open.
                defer { statement.reset() }
                try statement.bind(now.milliseconds, max(0, limit) + skipping.count)
                var due: [ScheduledCredential] = []
                while due.count < limit, try statement.step() {
                    guard let id = try? CredentialID(statement.text(0) ?? ""), !skipping.contains(id),
                        let status = CredentialStatus(rawValue: statement.text(2) ?? "")
                    else { continue }
                    due.append(
                        ScheduledCredential(
                            id: id, refreshAt: Timestamp(milliseconds: statement.int64(1)), status: status))
                }
                return due
            }
        }
    }

    public func earliestRefreshAt() async throws -> Timestamp? {
        try await threads.run { [self] in
            try withReader { connection in
                let statement = try connection.statement(
                    "SELECT min(refresh_at) FROM credentials INDEXED BY credentials_refresh_due WHERE refresh_at IS NOT NULL"
                )
                defer { statement.reset() }
                guard try statement.step() else { return nil }
                return statement.optionalInt64(0).map(Timestamp.init(milliseconds:))
            }
        }
    }

    public func openAttempts(limit: Int) async throws -> [RefreshAttempt] {
        try await threads.run { [self] in
            try withReader { connection in
                let statement = try connection.statement(
                    "SELECT \(Self.attemptColumns) FROM refresh_attempts WHERE state = 'open' ORDER BY started_at LIMIT ?1"
                )
                try statement.bind(max(0, limit))
                var attempts: [RefreshAttempt] = []
                while try statement.step() {
                    if let attempt = Self.attempt(from: statement) { attempts.append(attempt) }
                }
                return attempts
            }
        }
    }

    public func pruneFinishedAttempts(before: Timestamp, limit: Int) async throws -> Int {
        try await threads.run { [self] in
            try writeTransaction(durability: .normal) { connection in
                try connection.statement(
                    """
                    DELETE FROM refresh_attempts WHERE rowid IN (
                        SELECT rowid FROM refresh_attempts INDEXED BY refresh_attempts_finished
                        WHERE finished_at IS NOT NULL AND finished_at < ?1 LIMIT ?2)
                    """
                ).bind(before.milliseconds, max(0, limit)).run()
                let pruned = connection.changes
                try connection.statement("DELETE FROM received_answers WHERE stored_at < ?1").bind(
                    clock.now.adding(seconds: -Self.receivedAnswerRetention).milliseconds
                ).run()
                return pruned
            }
        }
    }

    /// How long a stored answer's key is kept (`received_answers`): longer than any spool waits.
    static let receivedAnswerRetention = 30.0 * 86_400

    static let attemptColumns = """
        attempt_id, credential_id, generation, refresh_token_fingerprint, lease_owner, lease_expires_at, started_at
        """

    static func attempt(from row: SQLiteStatement) -> RefreshAttempt? {
        guard let attemptID = row.text(0), let id = try? CredentialID(row.text(1) ?? "") else { return nil }
        return RefreshAttempt(
            attemptID: attemptID, credentialID: id, generation: row.int64(2),
            refreshTokenFingerprint: row.text(3) ?? "", leaseOwner: row.text(4) ?? "",
            leaseExpiresAt: Timestamp(milliseconds: row.int64(5)), startedAt: Timestamp(milliseconds: row.int64(6)))
    }
}

/// Journal writes inside a write transaction.
extension SQLiteCredentialWriter {
    func openAttempt(for id: CredentialID) async throws -> RefreshAttempt? {
        let statement = try connection.statement(
            "SELECT \(SQLiteDatabase.attemptColumns) FROM refresh_attempts WHERE credential_id = ?1 AND state = 'open'")
        try statement.bind(id.description)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return SQLiteDatabase.attempt(from: statement)
    }

    func beginAttempt(_ attempt: RefreshAttempt) async throws {
        try connection.statement(
            """
            INSERT INTO refresh_attempts (attempt_id, credential_id, generation, refresh_token_fingerprint, lease_owner,
                                          lease_expires_at, state, started_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'open', ?7)
            """
        ).bind(
            attempt.attemptID, attempt.credentialID.description, attempt.generation, attempt.refreshTokenFingerprint,
            attempt.leaseOwner, attempt.leaseExpiresAt.milliseconds, attempt.startedAt.milliseconds
        ).run()
    }

    func renewLease(attemptID: String, owner: String, until: Timestamp) async throws {
        try connection.statement(
            "UPDATE refresh_attempts SET lease_owner = ?2, lease_expires_at = ?3 WHERE attempt_id = ?1 AND state = 'open'"
        ).bind(attemptID, owner, until.milliseconds).run()
    }

    /// Failed and abandoned attempts stay (for diagnosis) until pruned.
    func finishAttempt(attemptID: String, state: RefreshAttempt.State, outcome: String?, at: Timestamp) async throws {
        try connection.statement(
            """
            UPDATE refresh_attempts SET state = ?2, outcome = ?3, finished_at = ?4
            WHERE attempt_id = ?1 AND state = 'open'
            """
        ).bind(attemptID, state.rawValue, outcome, at.milliseconds).run()
    }

    /// A succeeded attempt is deleted rather than kept: the credential's new generation records
    /// it, and keeping one row per refresh would grow the journal by millions of rows a day. One
    /// statement is both the fence and the close.
    func closeSucceededAttempt(attemptID: String, owner: String) async throws -> Bool {
        try connection.statement(
            "DELETE FROM refresh_attempts WHERE attempt_id = ?1 AND state = 'open' AND lease_owner = ?2"
        ).bind(attemptID, owner).run()
        return connection.changes == 1
    }

    func updateSchedule(_ update: ScheduleUpdate) async throws -> Bool {
        touch(update.id)
        try connection.statement(
            """
            UPDATE credentials SET status = ?3, refresh_at = ?4, last_error_code = ?5, last_error_message = ?6,
                last_error_at = ?7, refresh_failures = ?8, updated_at = ?9
            WHERE id = ?1 AND generation = ?2 AND (?10 IS NULL OR status = ?10)
            """
        ).bind(
            update.id.description, update.generation, update.status.rawValue, update.refreshAt?.milliseconds,
            update.lastError?.code, update.lastError?.message, update.lastError?.at.milliseconds,
            update.refreshFailures, update.updatedAt.milliseconds, update.expectedStatus?.rawValue
        ).run()
        return connection.changes > 0
    }

    /// Every write of a group commit runs in one: prepared once per connection, not parsed again
    /// for each write (the group's writer runs these hundreds of times a second).
    func savepoint<Result>(_ body: () async throws -> Result) async throws -> Result {
        try connection.statement("SAVEPOINT item").run()
        do {
            let result = try await body()
            try connection.statement("RELEASE item").run()
            return result
        } catch {
            cacheWrites.aWriteThrew = true
            try? connection.statement("ROLLBACK TO item").run()
            try? connection.statement("RELEASE item").run()
            throw error
        }
    }
}
