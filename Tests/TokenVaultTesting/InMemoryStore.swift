import Foundation
import Synchronization
import TokenVaultCore
import TokenVaultStorage

/// A `CredentialStore` and `KeyTermStore` in memory, for unit tests of logic above storage.
/// Write transactions work on a copy that replaces the state only when the body returns.
public final class InMemoryStore: CredentialStore, KeyTermStore, RefreshJournal, @unchecked Sendable {
    struct State {
        var credentials: [CredentialID: SealedCredentialRecord] = [:]
        var terms: [UInt32: WrappedTerm] = [:]
        var settings: [String: String] = [:]
        var audit: [StoredAuditEvent] = []
        var auditEnds: [String: AuditChainEnd] = [:]
        var lastAuditID: Int64 = 0
        var attempts: [String: JournalEntry] = [:]
        var nodes: [String: NodeRecord] = [:]
        var receivedAnswers: Set<String> = []
        var authorizations: [String: SealedAuthorization] = [:]
        /// Who holds a device grant, and until when.
        var deviceClaims: [String: (claim: String, until: Timestamp)] = [:]
        /// The outbox as written (delayed rows count as not due: the store has no clock).
        var webhooks: [NewWebhookDelivery] = []
        /// Statements that looked for delayed rows to drop.
        var webhookCancels = 0
    }

    struct JournalEntry {
        var attempt: RefreshAttempt
        var state: RefreshAttempt.State
        var outcome: String?
        var finishedAt: Timestamp?
    }

    private var state = State()
    private let lock = NSLock()
    /// The writers' turn: one transaction at a time, as on SQLite's one writer.
    private let writerTurn = ConnectionLender([WriterTurn()])
    private final class WriterTurn: Sendable {}
    private let transactionThread = TransactionThread()
    private let writesUnderWay = Atomic<Int>(0)
    private let mostWrites = Atomic<Int>(0)
    /// Told, at each transaction's `finishGroup`, the claims it was given (`prefetch`; none
    /// when it was not called) and how many writes it ran; what it throws, the group throws.
    private var groupObserver: (@Sendable (_ claims: [CredentialID], _ writes: Int) throws -> Void)?

    public init() {}

    /// Tests of group commit: see `groupObserver`.
    public func observeGroups(_ observer: @escaping @Sendable (_ claims: [CredentialID], _ writes: Int) throws -> Void)
    {
        lock.withLock { groupObserver = observer }
    }

    public var auditEvents: [AuditEvent] { lock.withLock { state.audit.map(\.event) } }

    /// The webhook outbox rows written, in order.
    public var webhookRows: [NewWebhookDelivery] { lock.withLock { state.webhooks } }
    /// How many times a write looked for delayed outbox rows to drop.
    public var webhookCancels: Int { lock.withLock { state.webhookCancels } }

    public func auditEvents(_ query: AuditQuery) async throws -> [StoredAuditEvent] {
        lock.withLock {
            let rows = state.audit.filter { query.includes(id: $0.id, credentialID: $0.event.credentialID) }
            return Array((query.order == .oldestFirst ? rows : rows.reversed()).prefix(max(0, query.limit)))
        }
    }

    public func auditChainEnds() async throws -> [AuditChainEnd] { lock.withLock { Array(state.auditEnds.values) } }

    public func record(_ id: CredentialID) async throws -> SealedCredentialRecord? {
        lock.withLock { state.credentials[id] }
    }
    public func recordWithoutWaiting(_ id: CredentialID) throws -> SealedCredentialRecord? {
        lock.withLock { state.credentials[id] }
    }

    public func list(_ query: CredentialQuery) async throws -> [CredentialMetadata] {
        let all = lock.withLock { Array(state.credentials.values.map(\.metadata)) }
        let matching = all.filter { metadata in
            (query.namespace == nil || metadata.id.namespace == query.namespace)
                && (query.namespaces?.contains(metadata.id.namespace) ?? true)
                && (query.status == nil || metadata.status == query.status)
                && (query.after.map { metadata.id > $0 } ?? true)
        }
        return Array(matching.sorted { $0.id < $1.id }.prefix(query.limit))
    }

    public func records(after: CredentialID?, limit: Int) async throws -> [SealedCredentialRecord] {
        lock.withLock {
            Array(
                state.credentials.values.filter { after == nil || $0.metadata.id > after! }
                    .sorted { $0.metadata.id < $1.metadata.id }.prefix(limit))
        }
    }

    public func records(notSealedWith term: UInt32, limit: Int) async throws -> [SealedCredentialRecord] {
        lock.withLock { Array(state.credentials.values.filter { $0.sealTerm != term }.prefix(limit)) }
    }

    /// Heartbeats on the wall clock (this store has no clock of its own).
    public func heartbeat(_ beat: NodeBeat) async throws -> HeartbeatReading {
        lock.withLock {
            let now = Timestamp.now()
            var record =
                state.nodes[beat.node]
                ?? NodeRecord(
                    node: beat.node, incarnation: beat.incarnation, beat: 0, beatAt: now, startedAt: now,
                    host: beat.host, pid: beat.pid)
            if record.incarnation != beat.incarnation { record.startedAt = now }
            record.incarnation = beat.incarnation
            record.beat += 1
            record.beatAt = now
            state.nodes[beat.node] = record
            return HeartbeatReading(databaseNow: now, nodes: state.nodes.values.sorted { $0.node < $1.node })
        }
    }

    public func isAnswerStored(_ callKey: String) async throws -> Bool {
        lock.withLock { state.receivedAnswers.contains(callKey) }
    }

    public func addAuthorization(_ row: SealedAuthorization, limit: Int, now: Timestamp) async throws -> Bool {
        lock.withLock {
            // Device grants are left to their poller, which announces their end.
            state.authorizations = state.authorizations.filter {
                $0.value.expiresAt > now || $0.value.kind == .deviceCode
            }
            guard state.authorizations.values.count(where: { $0.uid == row.uid }) < limit else { return false }
            state.authorizations[row.key] = row
            return true
        }
    }

    public func takeAuthorization(key: String) async throws -> SealedAuthorization? {
        lock.withLock {
            guard state.authorizations[key]?.kind == .authorizationCode else { return nil }
            return state.authorizations.removeValue(forKey: key)
        }
    }

    public func claimDevicePolls(now: Timestamp, claim: String, until: Timestamp, limit: Int) async throws
        -> [SealedAuthorization]
    {
        lock.withLock {
            let due = state.authorizations.values.filter { row in
                row.kind == .deviceCode && (row.nextPollAt ?? now) <= now
                    && (state.deviceClaims[row.key].map {
                        $0.until <= now
                            || ($0.claim != claim && LeaseName.node(of: $0.claim) == LeaseName.node(of: claim))
                    } ?? true)
            }.sorted { ($0.nextPollAt ?? now) < ($1.nextPollAt ?? now) }.prefix(limit)
            for row in due { state.deviceClaims[row.key] = (claim, until) }
            return Array(due)
        }
    }

    public func scheduleDevicePoll(key: String, claim: String, interval: Int, at: Timestamp) async throws -> Bool {
        lock.withLock {
            guard state.authorizations[key] != nil, state.deviceClaims[key]?.claim == claim else { return false }
            state.authorizations[key]?.pollInterval = interval
            state.authorizations[key]?.nextPollAt = at
            state.deviceClaims[key] = nil
            return true
        }
    }

    public func removeDevicePoll(key: String, ended: SignInEnd?) async throws -> Bool {
        lock.withLock {
            state.deviceClaims[key] = nil
            guard state.authorizations[key]?.kind == .deviceCode else { return false }
            return state.authorizations.removeValue(forKey: key) != nil
        }
    }

    public func waitingAuthorizations(uid: UInt32, now: Timestamp) async throws -> Int {
        lock.withLock {
            state.authorizations.values.filter { $0.uid == uid && ($0.expiresAt > now || $0.kind == .deviceCode) }
                .count
        }
    }

    public func devicePolls(for credentialID: CredentialID) async throws -> [SealedAuthorization] {
        lock.withLock {
            state.authorizations.values.filter { $0.kind == .deviceCode && $0.credentialID == credentialID }
                .sorted { $0.createdAt < $1.createdAt }
        }
    }

    public func nodes() async throws -> [NodeRecord] {
        lock.withLock { state.nodes.values.sorted { $0.node < $1.node } }
    }

    public func forgetNode(_ node: String) async throws -> Int? {
        lock.withLock {
            let removed = state.nodes.removeValue(forKey: node) != nil
            var released = 0
            for (key, entry) in state.attempts
            where entry.state == .open && LeaseName.node(of: entry.attempt.leaseOwner) == node {
                state.attempts[key]?.attempt.leaseOwner = LeaseName.released
                released += 1
            }
            return removed || released > 0 ? released : nil
        }
    }

    public func write<Result: Sendable>(
        durability: Durability, _ body: @escaping @Sendable (any CredentialWriter) async throws -> Result
    ) async throws -> Result {
        _ = mostWrites.max(writesUnderWay.add(1, ordering: .relaxed).newValue, ordering: .relaxed)
        defer { writesUnderWay.subtract(1, ordering: .relaxed) }
        // On a thread of its own, one transaction at a time, as a backend runs them: a body may
        // wait (a test's).
        return try await withTaskExecutorPreference(transactionThread) { [self] in
            let turn = await writerTurn.take()
            defer { writerTurn.giveBack(turn) }
            let writer = Writer(state: lock.withLock { state }, groupObserver: groupObserver)
            let result = try await body(writer)
            lock.withLock { state = writer.state }
            return result
        }
    }

    /// Calls of `write` under way now (waiting for the store's lock or inside it), and the most
    /// at once so far.
    public var writesAtOnce: Int { writesUnderWay.load(ordering: .relaxed) }
    public var mostWritesAtOnce: Int { mostWrites.load(ordering: .relaxed) }

    final class Writer: CredentialWriter {
        var state: State
        let groupObserver: (@Sendable ([CredentialID], Int) throws -> Void)?
        var claims: [CredentialID] = []
        var writes = 0

        init(state: State, groupObserver: (@Sendable ([CredentialID], Int) throws -> Void)?) {
            self.state = state
            self.groupObserver = groupObserver
        }

        func prefetch(_ claims: [CredentialID]) async throws { self.claims = claims }

        func insertWebhookDeliveries(_ rows: [NewWebhookDelivery]) async throws {
            for row in rows
            where !state.webhooks.contains(where: { $0.endpoint == row.endpoint && $0.messageID == row.messageID }) {
                state.webhooks.append(row)
            }
        }
        func cancelDelayedWebhooks(for id: CredentialID, endpoint: String?) async throws -> Set<String> {
            state.webhookCancels += 1
            let gone = state.webhooks.filter {
                $0.credentialID == id && $0.delaySeconds > 0 && (endpoint == nil || $0.endpoint == endpoint)
            }
            state.webhooks.removeAll { row in gone.contains(row) }
            return Set(gone.map(\.endpoint))
        }
        func finishGroup() async throws { try groupObserver?(claims, writes) }

        func record(_ id: CredentialID) async throws -> SealedCredentialRecord? { state.credentials[id] }
        func activeTerm() async throws -> UInt32 {
            guard let active = state.terms.values.first(where: \.isActive) else {
                throw VaultError.storage("this vault has no active data key term")
            }
            return active.term
        }
        func save(_ record: SealedCredentialRecord) async throws { state.credentials[record.metadata.id] = record }
        func delete(_ id: CredentialID) async throws -> Bool { state.credentials.removeValue(forKey: id) != nil }
        func lockAuditChain(_ chain: String) async throws {}
        func lastAuditRow(in chain: String) async throws -> (position: Int64, mac: [UInt8]?)? {
            state.audit.last { $0.chain == chain }.map { ($0.position, $0.mac) }
        }
        func newAuditIDs(_ count: Int) async throws -> [Int64] {
            defer { state.lastAuditID += Int64(count) }
            return (0..<Int64(count)).map { state.lastAuditID + 1 + $0 }
        }
        func insertAudits(_ rows: [StoredAuditEvent]) async throws { state.audit += rows }
        func deleteAudits(_ ids: [Int64]) async throws -> Int {
            let before = state.audit.count
            let gone = Set(ids)
            state.audit.removeAll { gone.contains($0.id) }
            return before - state.audit.count
        }
        func auditRows(after: Int64, limit: Int) async throws -> [StoredAuditEvent] {
            Array(state.audit.filter { $0.id > after }.prefix(limit))
        }
        func auditChainEnd(_ name: AuditChainEnd.Name, of chain: String) async throws -> AuditChainEnd? {
            state.auditEnds["\(chain)/\(name)"]
        }
        func setAuditChainEnd(_ end: AuditChainEnd) async throws {
            let key = "\(end.chain)/\(end.name)"
            if let stored = state.auditEnds[key], stored.position >= end.position { return }
            state.auditEnds[key] = end
        }
        func auditRowCount() async throws -> Int { state.audit.count }

        func nodeBeat(_ node: String) async throws -> Int64? { state.nodes[node]?.beat }

        func recordReceivedAnswer(_ callKey: String, credentialID: CredentialID, at: Timestamp) async throws {
            state.receivedAnswers.insert(callKey)
        }

        func openAttempt(for id: CredentialID) async throws -> RefreshAttempt? {
            state.attempts.values.first { $0.attempt.credentialID == id && $0.state == .open }?.attempt
        }

        /// A succeeded attempt leaves no row, as on PostgreSQL.
        func isAttemptRecorded(_ attemptID: String) async throws -> Bool { state.attempts[attemptID] != nil }

        func beginAttempt(_ attempt: RefreshAttempt) async throws {
            guard try await openAttempt(for: attempt.credentialID) == nil else {
                throw VaultError.conflict("credential \(attempt.credentialID) already has an open refresh attempt")
            }
            state.attempts[attempt.attemptID] = JournalEntry(attempt: attempt, state: .open)
        }

        func renewLease(attemptID: String, owner: String, until: Timestamp) async throws {
            state.attempts[attemptID]?.attempt.leaseOwner = owner
            state.attempts[attemptID]?.attempt.leaseExpiresAt = until
        }

        func closeSucceededAttempt(attemptID: String, owner: String) async throws -> Bool {
            guard let entry = state.attempts[attemptID], entry.state == .open, entry.attempt.leaseOwner == owner else {
                return false
            }
            state.attempts.removeValue(forKey: attemptID)
            return true
        }

        func finishAttempt(attemptID: String, state newState: RefreshAttempt.State, outcome: String?, at: Timestamp)
            throws
        {
            state.attempts[attemptID]?.state = newState
            state.attempts[attemptID]?.outcome = outcome
            state.attempts[attemptID]?.finishedAt = at
        }

        func updateSchedule(_ update: ScheduleUpdate) async throws -> Bool {
            guard var record = state.credentials[update.id], record.metadata.generation == update.generation else {
                return false
            }
            record.metadata.status = update.status
            record.metadata.refreshAt = update.refreshAt
            record.metadata.lastError = update.lastError
            record.metadata.refreshFailures = update.refreshFailures
            record.metadata.updatedAt = update.updatedAt
            state.credentials[update.id] = record
            return true
        }

        func savepoint<Result>(_ body: () async throws -> Result) async throws -> Result {
            writes += 1
            let saved = state
            do { return try await body() } catch {
                state = saved
                throw error
            }
        }
    }

    // MARK: RefreshJournal

    public func dueCredentials(at now: Timestamp, limit: Int, skipping: Set<CredentialID>) async throws
        -> [ScheduledCredential]
    {
        lock.withLock {
            state.credentials.values.compactMap { record -> ScheduledCredential? in
                guard let at = record.metadata.refreshAt, at <= now, !skipping.contains(record.metadata.id) else {
                    return nil
                }
                return ScheduledCredential(id: record.metadata.id, refreshAt: at, status: record.metadata.status)
            }.sorted { $0.refreshAt < $1.refreshAt }.prefix(limit).map { $0 }
        }
    }

    public func earliestRefreshAt() async throws -> Timestamp? {
        lock.withLock { state.credentials.values.compactMap(\.metadata.refreshAt).min() }
    }

    public func openAttempts(limit: Int) async throws -> [RefreshAttempt] {
        lock.withLock { Array(state.attempts.values.filter { $0.state == .open }.map(\.attempt).prefix(limit)) }
    }

    public func pruneFinishedAttempts(before: Timestamp, limit: Int) async throws -> Int {
        lock.withLock {
            let old = state.attempts.filter { $0.value.finishedAt.map { $0 < before } ?? false }.prefix(limit)
            for (key, _) in old { state.attempts.removeValue(forKey: key) }
            return old.count
        }
    }

    /// Every attempt ever journalled, for assertions.
    public var journal: [(attempt: RefreshAttempt, state: RefreshAttempt.State, outcome: String?)] {
        lock.withLock { state.attempts.values.map { ($0.attempt, $0.state, $0.outcome) } }
    }

    // MARK: KeyTermStore

    public func terms() throws -> [WrappedTerm] { lock.withLock { state.terms.values.sorted { $0.term < $1.term } } }

    public func addActiveTerm(_ term: WrappedTerm, keyCheck: String) throws {
        try lock.withLock {
            if let stored = state.settings[VaultSetting.keyCheck], stored != keyCheck {
                throw VaultError.staleMasterKey
            }
            state.settings[VaultSetting.keyCheck] = keyCheck
            for key in state.terms.keys { state.terms[key]?.isActive = false }
            var active = term
            active.isActive = true
            state.terms[term.term] = active
        }
    }

    public func removeTerm(_ term: UInt32) throws -> Bool {
        lock.withLock {
            guard state.terms[term]?.isActive == false,
                !state.credentials.values.contains(where: { $0.sealTerm == term })
            else { return false }
            state.terms[term] = nil
            return true
        }
    }

    public func rewrap(
        keyCheck: String, settings: [String: String], _ rewrap: @escaping @Sendable (WrappedTerm) throws -> WrappedTerm
    ) throws {
        try lock.withLock {
            var terms = state.terms
            for (number, term) in terms { terms[number] = try rewrap(term) }
            state.terms = terms
            state.settings.merge(settings) { $1 }
            state.settings[VaultSetting.keyCheck] = keyCheck
        }
    }

    public func termUsage() throws -> [UInt32: Int] {
        lock.withLock {
            var usage: [UInt32: Int] = [:]
            for term in state.terms.keys { usage[term] = state.credentials.values.filter { $0.sealTerm == term }.count }
            return usage
        }
    }

    public func setting(_ key: String) throws -> String? { lock.withLock { state.settings[key] } }
    public func setSettings(_ settings: [String: String]) throws {
        lock.withLock { state.settings.merge(settings) { $1 } }
    }
    public func addSetting(_ key: String, _ value: String) throws -> String {
        lock.withLock {
            if let stored = state.settings[key] { return stored }
            state.settings[key] = value
            return value
        }
    }
}
