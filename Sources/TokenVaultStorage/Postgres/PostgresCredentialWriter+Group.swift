import NIOCore
import PostgresNIO
import TokenVaultCore

/// Group commits on PostgreSQL: a transaction carries many writes, and the
/// statements they need are few and shared. The claimed credentials are locked (with the active
/// term read alongside), then read with their open attempts, in one wait of the writer's thread;
/// the writes' row changes are kept back and sent as at most four statements (saved rows,
/// schedules, closed attempts, new attempts) in one wait before the commit. Every answer given
/// from memory is checked against the rows those statements return; a difference splits the
/// group instead of committing it.
///
/// The fence is the same as for a write alone: each credential's lock is held from before its
/// row is read until the commit, its row is read after the lock is taken (a statement of its
/// own), and a refresh's close of its attempt decides whether its tokens are saved, as the
/// database confirms before anything commits. A credential whose lock was not had at once is
/// read and locked by its write, as alone.
extension PostgresCredentialWriter {
    /// Locks what it can of `claims` without waiting, and reads the rows and open attempts, and
    /// the active term, in one wait. A credential another process (or another transaction
    /// of this one) holds is not waited for here, where the whole group would wait: its entry is
    /// busy: a write that skips busy rows (`recordUnlessBusy`) skips it, one that must wait for it
    /// splits the group (`lockLate`), so that a group never waits for one lock while holding
    /// others.
    func prefetch(_ claims: [CredentialID]) async throws {
        guard group == nil, !claims.isEmpty else { return }
        let ids = Array(Set(claims.map(\.description)))
        // The rows are read by the next statement, which starts once the locks are had: it sees
        // every commit made before them. The active term comes with the locks (read once per
        // statement), not as a statement of its own: most groups seal something.
        let results = try await tracked {
            try await $0.execute([LockClaims(ids: ids), RecordsByID(ids: ids), OpenAttemptsOf(ids: ids)])
        }
        var entries: [CredentialID: PostgresWriteGroup.Entry] = [:]
        for row in results[0] {
            let (id, locked, active) = try row.decode((String, Bool, Int64?).self)
            entries[try CredentialID(id)] = .init(busy: !locked, row: nil, openAttempt: nil)
            if term == nil, let active { term = UInt32(truncatingIfNeeded: active) }
        }
        for row in results[1] {
            let record = try PostgresCredentialRow(row).record()
            entries[record.metadata.id]?.row = record
        }
        for row in results[2] {
            guard let attempt = try Self.attempt(row) else { continue }
            entries[attempt.credentialID]?.openAttempt = attempt
        }
        guard entries.count == ids.count else {
            throw VaultError.storage("PostgreSQL answered for \(entries.count) of \(ids.count) claimed credentials")
        }
        group = PostgresWriteGroup(entries: entries)
    }

    /// Keeps `change` of credential `id` back, applying it to the group's entry; the changes kept
    /// so far go first when one of them is to the same row.
    func keep(
        _ change: PostgresWriteGroup.Change, _ id: CredentialID,
        applying apply: (inout PostgresWriteGroup.Entry) -> Void
    ) async throws {
        if group?.mustSendBefore(change) == true { try await sendKept() }
        group?.keep(change, id, applying: apply)
    }

    /// Sends the kept changes in one wait and checks each answer given for them.
    func sendKept() async throws {
        guard let kept = group?.takeChanges(), !kept.isEmpty else { return }
        let statements = Self.statements(for: kept)
        changesSent += 1
        let results: [PostgresQueryResult]
        do {
            results = try await tracked { try await $0.pipeline(statements.map(\.query)) }
        } catch let error as VaultError where error.code == .storageUnavailable {
            throw error
        } catch {
            // Refused: which write's statement it was, each write alone will say.
            try split("PostgreSQL refused the group's changes: \(error)")
        }
        for (statement, result) in zip(statements, results) {
            guard let expected = statement.returns else { continue }
            let returned = Set(try result.rows.map { try $0.decode(String.self) })
            guard returned == expected else {
                try split("\(statement.name): the database returned other rows than the group expected")
            }
        }
    }

    func finishGroup() async throws {
        guard group != nil else { return }
        if let splitReason { throw WriteGroupSplit(splitReason) }
        if partialFailure {
            // A group of one write that failed: rolled back, its error is its result.
            markRollbackOnly()
            return
        }
        // A failed statement aborted the transaction: it cannot commit.
        if let statementFailure { throw statementFailure }
        try await sendKept()
    }

    /// Marks the group for splitting and throws: it is rolled back and each write runs alone.
    func split(_ reason: String) throws -> Never {
        splitReason = splitReason ?? reason
        throw WriteGroupSplit(reason)
    }

    /// A statement sending kept changes, and the keys its rows must return (nil: not checked).
    struct KeptStatement {
        let name: String
        let query: PostgresQuery
        let returns: Set<String>?
    }

    static func statements(for changes: [PostgresWriteGroup.Change]) -> [KeptStatement] {
        var closes: [(attemptID: String, owner: String, closes: Bool)] = []
        var begins: [RefreshAttempt] = []
        var saves: [SealedCredentialRecord] = []
        var schedules: [(update: ScheduleUpdate, applies: Bool)] = []
        for change in changes {
            switch change {
            case .closeAttempt(let attemptID, let owner, _, let expected): closes.append((attemptID, owner, expected))
            case .beginAttempt(let attempt): begins.append(attempt)
            case .save(let record): saves.append(record)
            case .schedule(let update, let applies): schedules.append((update, applies))
            }
        }
        var statements: [KeptStatement] = []
        // Rows first: an attempt opened in the group may be on a credential the group creates.
        if !saves.isEmpty {
            let columns = CredentialColumn.allCases.count
            var binds = PostgresBindings(capacity: saves.count * columns)
            let rows = saves.map { record in
                let first = binds.count + 1
                for value in CredentialColumn.values(of: record) { append(value, to: &binds) }
                return "(" + (first..<first + columns).map { "$\($0)" }.joined(separator: ", ") + ")"
            }
            statements.append(
                KeptStatement(
                    name: "saving rows",
                    query: PostgresQuery(
                        unsafeSQL: """
                            INSERT INTO credentials (\(CredentialColumn.insertList)) VALUES \(rows.joined(separator: ", "))
                            ON CONFLICT (id) DO UPDATE SET \(CredentialColumn.updateList)
                            """, binds: binds),
                    returns: nil))
        }
        if !schedules.isEmpty {
            var binds = PostgresBindings(capacity: schedules.count * 10)
            let rows = schedules.map { schedule in
                let update = schedule.update
                let first = binds.count + 1
                binds.append(update.id.description)
                binds.append(update.generation)
                binds.append(update.status.rawValue)
                binds.append(update.refreshAt?.milliseconds)
                binds.append(update.lastError?.code)
                binds.append(update.lastError?.message)
                binds.append(update.lastError?.at.milliseconds)
                binds.append(Int64(update.refreshFailures))
                binds.append(update.updatedAt.milliseconds)
                binds.append(update.expectedStatus?.rawValue)
                let types = ["text", "bigint", "text", "bigint", "text", "text", "bigint", "bigint", "bigint", "text"]
                return "(" + types.enumerated().map { "$\(first + $0.offset)::\($0.element)" }.joined(separator: ", ")
                    + ")"
            }
            statements.append(
                KeptStatement(
                    name: "changing schedules",
                    query: PostgresQuery(
                        unsafeSQL: """
                            UPDATE credentials AS c SET status = v.status, refresh_at = v.refresh_at,
                                last_error_code = v.code, last_error_message = v.message, last_error_at = v.error_at,
                                refresh_failures = v.failures, updated_at = v.updated_at
                            FROM (VALUES \(rows.joined(separator: ", ")))
                                AS v(id, generation, status, refresh_at, code, message, error_at, failures, updated_at,
                                    expected_status)
                            WHERE c.id = v.id AND c.generation = v.generation
                                AND (v.expected_status IS NULL OR c.status = v.expected_status)
                            RETURNING c.id
                            """, binds: binds),
                    returns: Set(schedules.filter(\.applies).map(\.update.id.description))))
        }
        if !closes.isEmpty {
            var binds = PostgresBindings(capacity: closes.count * 2)
            let rows = closes.map { close in
                binds.append(close.attemptID)
                binds.append(close.owner)
                return "($\(binds.count - 1)::text, $\(binds.count)::text)"
            }
            statements.append(
                KeptStatement(
                    name: "closing attempts",
                    query: PostgresQuery(
                        unsafeSQL: """
                            DELETE FROM refresh_attempts AS a USING (VALUES \(rows.joined(separator: ", "))) AS v(attempt_id, owner)
                            WHERE a.attempt_id = v.attempt_id AND a.lease_owner = v.owner AND a.state = 'open'
                            RETURNING a.attempt_id
                            """, binds: binds),
                    returns: Set(closes.filter(\.closes).map(\.attemptID))))
        }
        if !begins.isEmpty {
            var binds = PostgresBindings(capacity: begins.count * 7)
            let rows = begins.map { attempt in
                let first = binds.count + 1
                binds.append(attempt.attemptID)
                binds.append(attempt.credentialID.description)
                binds.append(attempt.generation)
                binds.append(attempt.refreshTokenFingerprint)
                binds.append(attempt.leaseOwner)
                binds.append(attempt.leaseExpiresAt.milliseconds)
                binds.append(attempt.startedAt.milliseconds)
                let places = (first..<first + 7).map { "$\($0)" }
                return "(\(places[0...5].joined(separator: ", ")), 'open', \(places[6]))"
            }
            statements.append(
                KeptStatement(
                    name: "opening attempts",
                    query: PostgresQuery(
                        unsafeSQL: """
                            INSERT INTO refresh_attempts (attempt_id, credential_id, generation, refresh_token_fingerprint,
                                                          lease_owner, lease_expires_at, state, started_at)
                            VALUES \(rows.joined(separator: ", "))
                            ON CONFLICT (credential_id) WHERE state = 'open' DO NOTHING RETURNING credential_id
                            """, binds: binds),
                    returns: Set(begins.map(\.credentialID.description))))
        }
        return statements
    }
}
