import NIOCore
import PostgresNIO
import Synchronization
import TokenVaultCore

/// The ledger's writes inside one PostgreSQL transaction on the writer connection. Each call is
/// one statement (one round trip). It notes the credentials it touched, for the cache.
final class PostgresCredentialWriter: CredentialWriter {
    let link: PostgresLink
    private let cache: RecordCache
    private(set) var touched: Set<CredentialID> = []
    private var term: UInt32?
    /// Audit chains whose turn this transaction holds (one round trip the first time only).
    private var lockedChains: Set<String> = []
    private var savepoints = 0

    init(link: PostgresLink, cache: RecordCache) {
        self.link = link
        self.cache = cache
    }

    /// Every statement that changes a credential row says so here first: the cache keeps the
    /// row out until the transaction has ended.
    private func touch(_ id: CredentialID) {
        if touched.insert(id).inserted { cache.beginWrite(id) }
    }

    /// Locks the credential's id for the rest of the transaction (another node's write of it
    /// waits), then reads the row: a read-modify-write of one credential is never interleaved.
    ///
    /// Two statements on purpose: under READ COMMITTED a statement reads the snapshot taken when
    /// it started, so a SELECT that waited for the lock inside itself would still see the row as
    /// it was before the other node's commit (the multi-node kill test caught exactly that: a
    /// spent refresh token presented again). The SELECT after the lock sees the committed row.
    func record(_ id: CredentialID) throws -> SealedCredentialRecord? {
        // Taken every time (re-entrant within the transaction): a lock taken inside a savepoint
        // that was rolled back is released with it.
        try link.query("SELECT pg_advisory_xact_lock(hashtextextended(\(id.description), 0))")
        return try link.credentialRecord(id)
    }

    func recordUnlessBusy(_ id: CredentialID) throws -> SealedCredentialRecord? {
        let locked =
            try link.query("SELECT pg_try_advisory_xact_lock(hashtextextended(\(id.description), 0))")
            .rows.first.map { try $0.decode(Bool.self) } ?? false
        guard locked else { throw VaultError.conflict("credential \(id) is being written by another process") }
        return try link.credentialRecord(id)
    }

    func activeTerm() throws -> UInt32 {
        if let term { return term }
        guard
            let read = try link.query("SELECT term FROM key_terms WHERE state = 'active'").rows.first
                .map({ try $0.decode(Int64.self) })
        else { throw VaultError.storage("this vault has no active data key term") }
        term = UInt32(truncatingIfNeeded: read)
        return UInt32(truncatingIfNeeded: read)
    }

    private static let upsert = """
        INSERT INTO credentials (\(CredentialColumn.insertList))
        VALUES (\((1...CredentialColumn.allCases.count).map { "$\($0)" }.joined(separator: ", ")))
        ON CONFLICT (id) DO UPDATE SET \(CredentialColumn.updateList)
        """

    func save(_ record: SealedCredentialRecord) throws {
        var binds = PostgresBindings(capacity: CredentialColumn.allCases.count)
        for value in CredentialColumn.values(of: record) { Self.append(value, to: &binds) }
        touch(record.metadata.id)
        try link.query(PostgresQuery(unsafeSQL: Self.upsert, binds: binds))
    }

    func delete(_ id: CredentialID) throws -> Bool {
        touch(id)
        return try link.query("DELETE FROM credentials WHERE id = \(id.description) RETURNING 1").rows.count > 0
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

    func openAttempt(for id: CredentialID) throws -> RefreshAttempt? {
        try link.query(
            """
            SELECT \(unescaped: Self.attemptColumns) FROM refresh_attempts
            WHERE credential_id = \(id.description) AND state = 'open'
            """
        ).rows.first.flatMap(Self.attempt)
    }

    /// Another node's open attempt (committed after this transaction looked) makes this insert do
    /// nothing: that is a lease held elsewhere, reported as a conflict for the ledger to read so.
    func beginAttempt(_ attempt: RefreshAttempt) throws {
        let inserted = try link.query(
            """
            INSERT INTO refresh_attempts (attempt_id, credential_id, generation, refresh_token_fingerprint, lease_owner,
                                          lease_expires_at, state, started_at)
            VALUES (\(attempt.attemptID), \(attempt.credentialID.description), \(attempt.generation),
                    \(attempt.refreshTokenFingerprint), \(attempt.leaseOwner), \(attempt.leaseExpiresAt.milliseconds), 'open',
                    \(attempt.startedAt.milliseconds))
            ON CONFLICT (credential_id) WHERE state = 'open' DO NOTHING RETURNING 1
            """
        ).rows.count
        guard inserted == 1 else {
            throw VaultError.conflict("credential \(attempt.credentialID) already has an open refresh attempt")
        }
    }

    func renewLease(attemptID: String, owner: String, until: Timestamp) throws {
        try link.query(
            """
            UPDATE refresh_attempts SET lease_owner = \(owner), lease_expires_at = \(until.milliseconds)
            WHERE attempt_id = \(attemptID) AND state = 'open'
            """)
    }

    func finishAttempt(attemptID: String, state: RefreshAttempt.State, outcome: String?, at: Timestamp) throws {
        try link.query(
            """
            UPDATE refresh_attempts SET state = \(state.rawValue), outcome = \(outcome), finished_at = \(at.milliseconds)
            WHERE attempt_id = \(attemptID) AND state = 'open'
            """)
    }

    func closeSucceededAttempt(attemptID: String, owner: String) throws -> Bool {
        try link.query(
            """
            DELETE FROM refresh_attempts WHERE attempt_id = \(attemptID) AND state = 'open' AND lease_owner = \(owner)
            RETURNING 1
            """
        ).rows.count == 1
    }

    func updateSchedule(_ update: ScheduleUpdate) throws -> Bool {
        touch(update.id)
        return try link.query(
            """
            UPDATE credentials SET status = \(update.status.rawValue), refresh_at = \(update.refreshAt?.milliseconds),
                last_error_code = \(update.lastError?.code), last_error_message = \(update.lastError?.message),
                last_error_at = \(update.lastError?.at.milliseconds), refresh_failures = \(Int64(update.refreshFailures)),
                updated_at = \(update.updatedAt.milliseconds)
            WHERE id = \(update.id.description) AND generation = \(update.generation) RETURNING 1
            """
        ).rows.count > 0
    }

    /// The transaction's first write needs no savepoint of its own (on PostgreSQL a transaction
    /// carries one write, `writesPerTransaction`): when it throws, the whole transaction is
    /// rolled back instead of committed, which saves two statements per write. A later write in
    /// the same transaction gets a real savepoint; none is run after a first one failed, since
    /// the rollback would undo it while reporting it done.
    private(set) var rollbackOnly = false

    func savepoint<Result>(_ body: () throws -> Result) throws -> Result {
        guard !rollbackOnly else {
            throw VaultError.storageUnavailable("an earlier write of this transaction failed; it is rolled back")
        }
        savepoints += 1
        if savepoints == 1 {
            do {
                return try body()
            } catch {
                rollbackOnly = true
                throw error
            }
        }
        let name = "item\(savepoints)"
        try link.send(PostgresQuery(unsafeSQL: "SAVEPOINT \(name)"))
        let lockedBefore = lockedChains
        do {
            let result = try body()
            try link.send(PostgresQuery(unsafeSQL: "RELEASE SAVEPOINT \(name)"))
            return result
        } catch {
            try? link.query(PostgresQuery(unsafeSQL: "ROLLBACK TO SAVEPOINT \(name)"))
            // Locks taken inside the savepoint are released with it; rows it touched are not.
            lockedChains = lockedBefore
            throw error
        }
    }

    // MARK: Audit trail

    /// A chain's turn: an advisory lock on its name's hash (seeded apart from the credentials'
    /// locks), so only this node's own audited writes take turns on it.
    func lockAuditChain(_ chain: String) throws {
        guard !lockedChains.contains(chain) else { return }
        try link.query("SELECT pg_advisory_xact_lock(hashtextextended(\(chain), 1))")
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
                operation: operation, credentialID: credential.flatMap { try? CredentialID($0) },
                outcome: AuditEvent.Outcome(rawValue: outcome) ?? .failed, detail: detail, count: Int(count),
                lastAt: lastAt.map(Timestamp.init(milliseconds:))),
            mac: mac.map { Array($0.readableBytesView) })
    }

    func lastAuditRow(in chain: String) throws -> (position: Int64, mac: [UInt8]?)? {
        try link.query(
            "SELECT position, mac FROM audit_events WHERE chain = \(chain) ORDER BY position DESC LIMIT 1"
        ).rows.first.map { row in
            let (position, mac) = try row.decode((Int64, ByteBuffer?).self)
            return (position, mac.map { Array($0.readableBytesView) })
        }
    }

    /// From the sequence: never given twice, whichever node asks.
    func newAuditIDs(_ count: Int) throws -> [Int64] {
        try link.query("SELECT nextval('audit_event_ids') FROM generate_series(1, \(Int64(count)))").rows
            .map { try $0.decode(Int64.self) }.sorted()
    }

    func insertAudits(_ rows: [StoredAuditEvent]) throws {
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
            try link.query(
                PostgresQuery(
                    unsafeSQL: "INSERT INTO audit_events (\(Self.auditColumns)) VALUES "
                        + tuples.joined(separator: ", "),
                    binds: binds))
        }
    }

    func deleteAudits(_ ids: [Int64]) throws -> Int {
        try link.query("DELETE FROM audit_events WHERE id = ANY(\(ids))").metadata.rows ?? 0
    }

    func auditRows(after: Int64, limit: Int) throws -> [StoredAuditEvent] {
        try link.query(
            "SELECT \(unescaped: Self.auditColumns) FROM audit_events WHERE id > \(after) ORDER BY id LIMIT \(Int64(limit))"
        ).rows.map(Self.auditRow)
    }

    func auditChainEnd(_ name: AuditChainEnd.Name, of chain: String) throws -> AuditChainEnd? {
        try link.query(
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

    func setAuditChainEnd(_ end: AuditChainEnd) throws {
        try link.query(
            """
            INSERT INTO audit_chain (\(unescaped: Self.chainEndColumns))
            VALUES (\(end.chain), \(end.name.rawValue), \(end.rowID), \(end.position), \(ByteBuffer(bytes: end.mac)),
                    \(ByteBuffer(bytes: end.seal)))
            ON CONFLICT (chain, name) DO UPDATE
            SET row_id = excluded.row_id, position = excluded.position, mac = excluded.mac, seal = excluded.seal
            WHERE audit_chain.position < excluded.position
            """)
    }

    func auditRowCount() throws -> Int {
        Int(try link.query("SELECT count(*) FROM audit_events").rows.first?.decode(Int64.self) ?? 0)
    }
}
