import NIOCore
import PostgresNIO
import Synchronization
import TokenVaultCore

/// The ledger's writes inside one PostgreSQL transaction on the writer connection. It notes the
/// credentials it touched, for the cache.
///
/// Two ways of working. Alone (no claims), each call is one statement, one round trip. In a
/// group commit the claimed credentials are locked and read first, in one wait
/// (`prefetch`), the writes read them from `group`, and their row changes are kept back and
/// sent together before the commit (`PostgresCredentialWriter+Group.swift`). A change to a
/// credential nobody claimed, and every other statement, still runs at once.
final class PostgresCredentialWriter: CredentialWriter {
    let link: PostgresLink
    private let cache: RecordCache
    /// What the transaction changed, for the cache once it has ended.
    private(set) var cacheWrites = RecordCache.Writes()
    var term: UInt32?
    /// The server's timeline, once this transaction read it (`timeline()`).
    var seenTimeline: Int64?
    /// Audit chains whose turn this transaction holds (one round trip the first time only).
    private var lockedChains: Set<String> = []
    private var savepoints = 0

    // A group commit's state (nil `group`: working alone).
    var group: PostgresWriteGroup?
    /// Statements that changed something (kept changes sent, or a change run at once): a write
    /// of the group during which this moved cannot be undone alone.
    var changesSent = 0
    /// The first statement that failed: the transaction is aborted on the server from then on.
    var statementFailure: (any Error)?
    /// Why the group must be retried one write at a time (`WriteGroupSplit`), once known.
    var splitReason: String?

    /// Whether the server lets this role read its timeline.
    let timelines: TimelineReader

    init(link: PostgresLink, cache: RecordCache, timelines: TimelineReader) {
        self.link = link
        self.cache = cache
        self.timelines = timelines
    }

    /// Every statement of the transaction goes through here (the first failure is remembered).
    @discardableResult
    func run(_ query: PostgresQuery) async throws -> PostgresQueryResult {
        try await tracked { try await $0.query(query) }
    }

    func tracked<Result>(_ body: (PostgresLink) async throws -> Result) async throws -> Result {
        do {
            return try await body(link)
        } catch {
            if statementFailure == nil { statementFailure = error }
            throw error
        }
    }

    /// A statement that changes rows, run at once: in a group, after the changes kept back.
    @discardableResult
    func change(_ query: PostgresQuery) async throws -> PostgresQueryResult {
        if group != nil { try await sendKept() }
        changesSent += 1
        return try await run(query)
    }

    /// Every statement that changes a credential row says so here first: the cache keeps the
    /// row out until the transaction has ended.
    func touch(_ id: CredentialID) {
        cacheWrites.touch(id, in: cache)
    }

    /// Locks the credential's id for the rest of the transaction (another node's write of it
    /// waits), then reads the row: a read-modify-write of one credential is never interleaved.
    ///
    /// Two statements on purpose: under READ COMMITTED a statement reads the snapshot taken when
    /// it started, so a SELECT that waited for the lock inside itself would still see the row as
    /// it was before the other node's commit (the multi-node kill test caught exactly that: a
    /// spent refresh token presented again). The SELECT after the lock sees the committed row.
    func record(_ id: CredentialID) async throws -> SealedCredentialRecord? {
        cacheWrites.lockedRead(id)
        if let entry = group?.locked(id) { return entry.row }
        // Taken every time (re-entrant within the transaction): a lock taken inside a savepoint
        // that was rolled back is released with it. In a group, `lockLate` takes it.
        if group != nil {
            try await lockLate(id)
        } else {
            try await run("SELECT pg_advisory_xact_lock(hashtextextended(\(id.description), 0))")
        }
        return try await tracked { try await $0.credentialRecord(id) }
    }

    func recordUnlessBusy(_ id: CredentialID) async throws -> SealedCredentialRecord? {
        if let entry = group?.entries[id] {
            guard !entry.busy else { throw Self.busy(id) }
            cacheWrites.lockedRead(id)
            return entry.row
        }
        guard try await tryLock(id) else { throw Self.busy(id) }
        cacheWrites.lockedRead(id)
        return try await tracked { try await $0.credentialRecord(id) }
    }

    /// In a group, a credential this transaction has not locked (its claim found it busy, or it
    /// was not claimed): locked now without waiting, and read from the database from then on. A
    /// group never waits for a lock while it holds others: two groups, or a group and a write
    /// alone, would wait on each other in a circle (PostgreSQL breaks that after a second, failing
    /// one side). A credential held elsewhere splits the group instead, and each write waits for
    /// what it needs alone. A transaction that holds nothing yet waits, as a write alone does.
    func lockLate(_ id: CredentialID) async throws {
        guard let group, group.locked(id) == nil else { return }
        self.group?.forget(id)
        if try await tryLock(id) { return }
        if group.holdsLocks || !lockedChains.isEmpty || locksTakenLate > 0 {
            try split("credential \(id) is held by another transaction; the group does not wait for it")
        }
        try await run("SELECT pg_advisory_xact_lock(hashtextextended(\(id.description), 0))")
        locksTakenLate += 1
    }

    /// Locks the credential's id for the rest of the transaction if no other transaction holds
    /// it, without waiting; a lock taken counts in `locksTakenLate`.
    private func tryLock(_ id: CredentialID) async throws -> Bool {
        let locked =
            try await run("SELECT pg_try_advisory_xact_lock(hashtextextended(\(id.description), 0))")
            .rows.first.map { try $0.decode(Bool.self) } ?? false
        if locked { locksTakenLate += 1 }
        return locked
    }

    /// Credential locks this transaction took besides its group's claims (`lockLate`,
    /// `recordUnlessBusy`): held as long as the claims'.
    var locksTakenLate = 0

    static func busy(_ id: CredentialID) -> VaultError {
        VaultError.conflict("credential \(id) is being written by another process")
    }

    func activeTerm() async throws -> UInt32 {
        if let term { return term }
        guard
            let read = try await run("SELECT term FROM key_terms WHERE state = 'active'").rows.first
                .map({ try $0.decode(Int64.self) })
        else { throw VaultError.storage("this vault has no active data key term") }
        term = UInt32(truncatingIfNeeded: read)
        return UInt32(truncatingIfNeeded: read)
    }

    static let upsert = """
        INSERT INTO credentials (\(CredentialColumn.insertList))
        VALUES (\((1...CredentialColumn.allCases.count).map { "$\($0)" }.joined(separator: ", ")))
        ON CONFLICT (id) DO UPDATE SET \(CredentialColumn.updateList)
        """

    func save(_ record: SealedCredentialRecord) async throws {
        let id = record.metadata.id
        touch(id)
        if group?.locked(id) != nil {
            try await keep(.save(record), id) { $0.row = record }
        } else {
            try await lockLate(id)
            var binds = PostgresBindings(capacity: CredentialColumn.allCases.count)
            for value in CredentialColumn.values(of: record) { Self.append(value, to: &binds) }
            try await change(PostgresQuery(unsafeSQL: Self.upsert, binds: binds))
        }
        cacheWrites.saved(record)
    }

    func delete(_ id: CredentialID) async throws -> Bool {
        touch(id)
        try await lockLate(id)
        let deleted =
            try await change("DELETE FROM credentials WHERE id = \(id.description) RETURNING 1").rows.count > 0
        // Its attempts go with it (ON DELETE CASCADE).
        group?.update(id) {
            $0.row = nil
            $0.openAttempt = nil
        }
        return deleted
    }

    static func append(_ value: ColumnValue, to binds: inout PostgresBindings) {
        switch value {
        case .null: binds.appendNull()
        case .integer(let integer): binds.append(integer)
        case .text(let text): binds.append(text)
        case .blob(let blob): binds.append(ByteBuffer(bytes: blob))
        }
    }

    // MARK: Refresh journal

    static let attemptColumns = """
        attempt_id, credential_id, generation, refresh_token_fingerprint, lease_owner, lease_expires_at, started_at
        """

    static func attempt(_ row: PostgresRow) throws -> RefreshAttempt? {
        let (attemptID, credential, generation, fingerprint, owner, expires, started) = try row.decode(
            (String, String, Int64, String, String, Int64, Int64).self)
        guard let id = try? CredentialID(credential) else { return nil }
        return RefreshAttempt(
            attemptID: attemptID, credentialID: id, generation: generation, refreshTokenFingerprint: fingerprint,
            leaseOwner: owner, leaseExpiresAt: Timestamp(milliseconds: expires),
            startedAt: Timestamp(milliseconds: started))
    }

    func openAttempt(for id: CredentialID) async throws -> RefreshAttempt? {
        if let entry = group?.locked(id) { return entry.openAttempt }
        return try await run(
            """
            SELECT \(unescaped: Self.attemptColumns) FROM refresh_attempts
            WHERE credential_id = \(id.description) AND state = 'open'
            """
        ).rows.first.flatMap(Self.attempt)
    }

    /// Another node's open attempt (committed after this transaction looked) makes this insert do
    /// nothing: that is a lease held elsewhere, reported as a conflict for the ledger to read so.
    func beginAttempt(_ attempt: RefreshAttempt) async throws {
        let id = attempt.credentialID
        if let entry = group?.locked(id) {
            guard entry.openAttempt == nil else { throw Self.attemptOpen(id) }
            try await keep(.beginAttempt(attempt), id) { $0.openAttempt = attempt }
            return
        }
        try await lockLate(id)
        let inserted = try await change(
            """
            INSERT INTO refresh_attempts (attempt_id, credential_id, generation, refresh_token_fingerprint, lease_owner,
                                          lease_expires_at, state, started_at)
            VALUES (\(attempt.attemptID), \(id.description), \(attempt.generation),
                    \(attempt.refreshTokenFingerprint), \(attempt.leaseOwner), \(attempt.leaseExpiresAt.milliseconds), 'open',
                    \(attempt.startedAt.milliseconds))
            ON CONFLICT (credential_id) WHERE state = 'open' DO NOTHING RETURNING 1
            """
        ).rows.count
        guard inserted == 1 else { throw Self.attemptOpen(id) }
    }

    static func attemptOpen(_ id: CredentialID) -> VaultError {
        VaultError.conflict("credential \(id) already has an open refresh attempt")
    }

    func renewLease(attemptID: String, owner: String, until: Timestamp) async throws {
        try await change(
            """
            UPDATE refresh_attempts SET lease_owner = \(owner), lease_expires_at = \(until.milliseconds)
            WHERE attempt_id = \(attemptID) AND state = 'open'
            """)
        if let id = group?.credential(withOpenAttempt: attemptID) {
            group?.update(id) {
                $0.openAttempt?.leaseOwner = owner
                $0.openAttempt?.leaseExpiresAt = until
            }
        }
    }

    func finishAttempt(attemptID: String, state: RefreshAttempt.State, outcome: String?, at: Timestamp) async throws {
        try await change(
            """
            UPDATE refresh_attempts SET state = \(state.rawValue), outcome = \(outcome), finished_at = \(at.milliseconds)
            WHERE attempt_id = \(attemptID) AND state = 'open'
            """)
        if let id = group?.credential(withOpenAttempt: attemptID) { group?.update(id) { $0.openAttempt = nil } }
    }

    func closeSucceededAttempt(attemptID: String, owner: String) async throws -> Bool {
        if let id = group?.credential(withOpenAttempt: attemptID) {
            let closes = group?.entries[id]?.openAttempt?.leaseOwner == owner
            try await keep(.closeAttempt(attemptID: attemptID, owner: owner, credential: id, closes: closes), id) {
                if closes { $0.openAttempt = nil }
            }
            return closes
        }
        return try await change(
            """
            DELETE FROM refresh_attempts WHERE attempt_id = \(attemptID) AND state = 'open' AND lease_owner = \(owner)
            RETURNING 1
            """
        ).rows.count == 1
    }

    func updateSchedule(_ update: ScheduleUpdate) async throws -> Bool {
        touch(update.id)
        if let entry = group?.locked(update.id) {
            let applies = entry.row.map { update.applies(to: $0.metadata) } ?? false
            try await keep(.schedule(update, applies: applies), update.id) {
                if applies { $0.row?.metadata.apply(update) }
            }
            return applies
        }
        try await lockLate(update.id)
        return try await change(
            """
            UPDATE credentials SET status = \(update.status.rawValue), refresh_at = \(update.refreshAt?.milliseconds),
                last_error_code = \(update.lastError?.code), last_error_message = \(update.lastError?.message),
                last_error_at = \(update.lastError?.at.milliseconds), refresh_failures = \(Int64(update.refreshFailures)),
                updated_at = \(update.updatedAt.milliseconds)
            WHERE id = \(update.id.description) AND generation = \(update.generation)
                AND (\(update.expectedStatus?.rawValue)::text IS NULL OR status = \(update.expectedStatus?.rawValue))
            RETURNING 1
            """
        ).rows.count > 0
    }

    /// Alone, the transaction's first write needs no savepoint of its own: when it throws, the
    /// whole transaction is rolled back instead of committed, which saves two statements per
    /// write. A later write in the same transaction gets a real savepoint; none is run after a
    /// first one failed, since the rollback would undo it while reporting it done. In a group,
    /// a write that throws before anything of it was sent is undone in memory; one that threw
    /// after splits the group (`finishGroup`).
    private(set) var rollbackOnly = false

    func savepoint<Result>(_ body: () async throws -> Result) async throws -> Result {
        guard !rollbackOnly else {
            throw VaultError.storageUnavailable("an earlier write of this transaction failed; it is rolled back")
        }
        savepoints += 1
        if group != nil { return try await groupSavepoint(body) }
        if savepoints == 1 {
            do {
                return try await body()
            } catch {
                rollbackOnly = true
                cacheWrites.aWriteThrew = true
                throw error
            }
        }
        let name = "item\(savepoints)"
        try await link.send(PostgresQuery(unsafeSQL: "SAVEPOINT \(name)"))
        let lockedBefore = lockedChains
        do {
            let result = try await body()
            try await link.send(PostgresQuery(unsafeSQL: "RELEASE SAVEPOINT \(name)"))
            return result
        } catch {
            cacheWrites.aWriteThrew = true
            _ = try? await link.query(PostgresQuery(unsafeSQL: "ROLLBACK TO SAVEPOINT \(name)"))
            // Locks taken inside the savepoint are released with it; rows it touched are not.
            lockedChains = lockedBefore
            throw error
        }
    }

    /// A write of a group: undone in memory when it throws before anything of it was sent;
    /// otherwise the group is split (`finishGroup`), or, a group of one, rolled back.
    private func groupSavepoint<Result>(_ body: () async throws -> Result) async throws -> Result {
        if partialFailure, splitReason == nil {
            splitReason = "an earlier write of the group failed after part of it was sent"
        }
        if let splitReason { throw WriteGroupSplit(splitReason) }
        group?.beginWrite()
        let sentBefore = changesSent
        do {
            return try await body()
        } catch {
            cacheWrites.aWriteThrew = true
            if changesSent == sentBefore && statementFailure == nil {
                group?.rollBackWrite()
            } else {
                partialFailure = true
                if savepoints > 1 { splitReason = splitReason ?? "a write failed after part of it was sent" }
            }
            throw error
        }
    }

    /// A write of the group failed after part of it was sent.
    var partialFailure = false

    func markRollbackOnly() {
        rollbackOnly = true
        cacheWrites.aWriteThrew = true
    }

    // MARK: Audit trail

    /// A chain's turn: an advisory lock on its name's hash (seeded apart from the credentials'
    /// locks), so only this node's own audited writes take turns on it.
    func lockAuditChain(_ chain: String) async throws {
        guard !lockedChains.contains(chain) else { return }
        try await run("SELECT pg_advisory_xact_lock(hashtextextended(\(chain), 1))")
        lockedChains.insert(chain)
    }

    static let auditColumns =
        "id, at, actor_uid, actor_gid, actor_pid, operation, credential_id, outcome, detail, count, last_at, mac, "
        + "chain, position"
    static let chainEndColumns = "chain, name, row_id, position, mac, seal"

    static func auditRow(_ row: PostgresRow) throws -> StoredAuditEvent {
        let (id, at, uid, gid, pid, operation, credential, outcome, detail, count, lastAt, mac, chain, position) =
            try row.decode(
                (
                    Int64, Int64, Int64?, Int64?, Int64?, String, String?, String, String?, Int64, Int64?, ByteBuffer?,
                    String, Int64
                ).self)
        return StoredAuditEvent(
            id: id, chain: chain, position: position,
            event: AuditEvent(
                at: Timestamp(milliseconds: at), uid: uid.map { UInt32(truncatingIfNeeded: $0) },
                gid: gid.map { UInt32(truncatingIfNeeded: $0) }, pid: pid.map { Int32(truncatingIfNeeded: $0) },
                operation: AuditOperation(stored: operation),
                credentialID: credential.flatMap { try? CredentialID($0) },
                outcome: AuditEvent.Outcome(rawValue: outcome) ?? .failed, detail: detail, count: Int(count),
                lastAt: lastAt.map(Timestamp.init(milliseconds:))),
            mac: mac.map { Array($0.readableBytesView) })
    }

    func lastAuditRow(in chain: String) async throws -> (position: Int64, mac: [UInt8]?)? {
        try await run(
            "SELECT position, mac FROM audit_events WHERE chain = \(chain) ORDER BY position DESC LIMIT 1"
        ).rows.first.map { row in
            let (position, mac) = try row.decode((Int64, ByteBuffer?).self)
            return (position, mac.map { Array($0.readableBytesView) })
        }
    }

    /// From the sequence: never given twice, whichever node asks.
    func newAuditIDs(_ count: Int) async throws -> [Int64] {
        try await run("SELECT nextval('audit_event_ids') FROM generate_series(1, \(Int64(count)))").rows
            .map { try $0.decode(Int64.self) }.sorted()
    }

    func insertAudits(_ rows: [StoredAuditEvent]) async throws {
        // Multi-row VALUES, 500 rows (7,000 binds) per statement.
        for start in stride(from: 0, to: rows.count, by: 500) {
            let chunk = rows[start..<min(rows.count, start + 500)]
            var binds = PostgresBindings(capacity: chunk.count * 14)
            var tuples: [String] = []
            for row in chunk {
                let event = row.event
                let base = binds.count
                tuples.append("(" + (1...14).map { "$\(base + $0)" }.joined(separator: ", ") + ")")
                binds.append(row.id)
                binds.append(event.at.milliseconds)
                binds.append(event.uid.map(Int64.init))
                binds.append(event.gid.map(Int64.init))
                binds.append(event.pid.map(Int64.init))
                binds.append(event.operation)
                binds.append(event.credentialID?.description)
                binds.append(event.outcome.rawValue)
                binds.append(event.detail)
                binds.append(Int64(event.count))
                binds.append(event.lastAt?.milliseconds)
                binds.append(row.mac.map { ByteBuffer(bytes: $0) })
                binds.append(row.chain)
                binds.append(row.position)
            }
            try await change(
                PostgresQuery(
                    unsafeSQL: "INSERT INTO audit_events (\(Self.auditColumns)) VALUES "
                        + tuples.joined(separator: ", "),
                    binds: binds))
        }
    }

    func deleteAudits(_ ids: [Int64]) async throws -> Int {
        try await change("DELETE FROM audit_events WHERE id = ANY(\(ids))").metadata.rows ?? 0
    }

    func auditRows(after: Int64, limit: Int) async throws -> [StoredAuditEvent] {
        try await run(
            "SELECT \(unescaped: Self.auditColumns) FROM audit_events WHERE id > \(after) ORDER BY id LIMIT \(Int64(limit))"
        ).rows.map(Self.auditRow)
    }

    func auditChainEnd(_ name: AuditChainEnd.Name, of chain: String) async throws -> AuditChainEnd? {
        try await run(
            """
            SELECT \(unescaped: Self.chainEndColumns) FROM audit_chain
            WHERE chain = \(chain) AND name = \(name.rawValue)
            """
        ).rows.first.flatMap(Self.chainEnd)
    }

    static func chainEnd(_ row: PostgresRow) throws -> AuditChainEnd? {
        let (chain, name, rowID, position, mac, seal) = try row.decode(
            (String, String, Int64, Int64, ByteBuffer, ByteBuffer).self)
        guard let name = AuditChainEnd.Name(rawValue: name) else { return nil }
        return AuditChainEnd(
            chain: chain, name: name, rowID: rowID, position: position, mac: Array(mac.readableBytesView),
            seal: Array(seal.readableBytesView))
    }

    func setAuditChainEnd(_ end: AuditChainEnd) async throws {
        try await change(
            """
            INSERT INTO audit_chain (\(unescaped: Self.chainEndColumns))
            VALUES (\(end.chain), \(end.name.rawValue), \(end.rowID), \(end.position), \(ByteBuffer(bytes: end.mac)),
                    \(ByteBuffer(bytes: end.seal)))
            ON CONFLICT (chain, name) DO UPDATE
            SET row_id = excluded.row_id, position = excluded.position, mac = excluded.mac, seal = excluded.seal
            WHERE audit_chain.position < excluded.position
            """)
    }

    func auditRowCount() async throws -> Int {
        await Int(try run("SELECT count(*) FROM audit_events").rows.first?.decode(Int64.self) ?? 0)
    }
}
