import Histogram
import Synchronization
import TokenVaultCore
import TokenVaultStorage

/// The vault's database as the engine sees it (its `CredentialStore` and `RefreshJournal`),
/// with counters: write transactions, how long each held the writer and how much of that was
/// the callers' work rather than BEGIN/COMMIT (the commit's fsync), and the scheduler's due
/// queries. With `durability` set, every transaction is committed at that durability instead
/// of the one asked for: only for the labelled `--durability normal` comparison.
final class InstrumentedStore: CredentialStore, RefreshJournal, Sendable {
    struct Counters: Sendable {
        var transactions = 0
        var fullTransactions = 0
        /// Seconds inside `write`, and inside the callers' bodies within it.
        var writeSeconds = 0.0
        var bodySeconds = 0.0
        var dueQueries = 0
        var dueRows = 0
        var dueSeconds = 0.0
        var recordReads = 0
        /// Savepoints (coalesced writes) per transaction.
        var batches = PhaseRecorder.makeHistogram()
    }

    let base: SQLiteDatabase
    let durability: Durability?
    private let counters = Mutex(Counters())

    init(_ base: SQLiteDatabase, durability: Durability? = nil) {
        self.base = base
        self.durability = durability
    }

    var snapshot: Counters { counters.withLock { $0 } }

    /// Starts the batch-size histogram afresh (the end of the warm-up).
    func resetBatches() { counters.withLock { $0.batches = PhaseRecorder.makeHistogram() } }

    // MARK: CredentialStore

    func record(_ id: CredentialID) async throws -> SealedCredentialRecord? {
        counters.withLock { $0.recordReads += 1 }
        return try await base.record(id)
    }

    func recordWithoutWaiting(_ id: CredentialID) throws -> SealedCredentialRecord? {
        try base.recordWithoutWaiting(id)
    }

    func list(_ query: CredentialQuery) async throws -> [CredentialMetadata] { try await base.list(query) }

    func records(after: CredentialID?, limit: Int) async throws -> [SealedCredentialRecord] {
        try await base.records(after: after, limit: limit)
    }

    func records(notSealedWith term: UInt32, limit: Int) async throws -> [SealedCredentialRecord] {
        try await base.records(notSealedWith: term, limit: limit)
    }

    func auditEvents(_ query: AuditQuery) async throws -> [StoredAuditEvent] { try await base.auditEvents(query) }

    func auditChainEnds() async throws -> [AuditChainEnd] { try await base.auditChainEnds() }

    func write<Result: Sendable>(
        durability requested: Durability, _ body: @escaping @Sendable (any CredentialWriter) async throws -> Result
    ) async throws -> Result {
        let effective = durability ?? requested
        let started = monotonicSeconds()
        let inside = BodyMeasure()
        defer {
            let total = monotonicSeconds() - started
            counters.withLock {
                $0.transactions += 1
                if effective == .full { $0.fullTransactions += 1 }
                $0.writeSeconds += total
                $0.bodySeconds += inside.seconds
                if inside.batch > 0 { $0.batches.record(UInt64(inside.batch)) }
            }
        }
        return try await base.write(durability: effective) { writer in
            let bodyStarted = monotonicSeconds()
            let counting = CountingWriter(writer)
            defer {
                inside.seconds = monotonicSeconds() - bodyStarted
                inside.batch = counting.savepoints
            }
            return try await body(counting)
        }
    }

    /// What the body of one transaction took, written on the store's thread and read after it.
    private final class BodyMeasure: @unchecked Sendable {
        var seconds = 0.0
        var batch = 0
    }

    // MARK: NodeRegistry

    func heartbeat(_ beat: NodeBeat) async throws -> HeartbeatReading { try await base.heartbeat(beat) }
    func nodes() async throws -> [NodeRecord] { try await base.nodes() }
    func isAnswerStored(_ callKey: String) async throws -> Bool { try await base.isAnswerStored(callKey) }
    func forgetNode(_ node: String) async throws -> Int? { try await base.forgetNode(node) }
    func addAuthorization(_ row: SealedAuthorization, limit: Int, now: Timestamp) async throws -> Bool {
        try await base.addAuthorization(row, limit: limit, now: now)
    }
    func takeAuthorization(key: String) async throws -> SealedAuthorization? {
        try await base.takeAuthorization(key: key)
    }
    func claimDevicePolls(now: Timestamp, claim: String, until: Timestamp, limit: Int) async throws
        -> [SealedAuthorization]
    {
        try await base.claimDevicePolls(now: now, claim: claim, until: until, limit: limit)
    }
    func scheduleDevicePoll(key: String, claim: String, interval: Int, at: Timestamp) async throws -> Bool {
        try await base.scheduleDevicePoll(key: key, claim: claim, interval: interval, at: at)
    }
    func removeDevicePoll(key: String, ended: SignInEnd?) async throws -> Bool {
        try await base.removeDevicePoll(key: key, ended: ended)
    }
    func devicePolls(for credentialID: CredentialID) async throws -> [SealedAuthorization] {
        try await base.devicePolls(for: credentialID)
    }

    func waitingAuthorizations(uid: UInt32, now: Timestamp) async throws -> Int {
        try await base.waitingAuthorizations(uid: uid, now: now)
    }

    // MARK: RefreshJournal

    func dueCredentials(at now: Timestamp, limit: Int, skipping: Set<CredentialID>) async throws
        -> [ScheduledCredential]
    {
        let started = monotonicSeconds()
        let due = try await base.dueCredentials(at: now, limit: limit, skipping: skipping)
        let elapsed = monotonicSeconds() - started
        counters.withLock {
            $0.dueQueries += 1
            $0.dueRows += due.count
            $0.dueSeconds += elapsed
        }
        return due
    }

    func earliestRefreshAt() async throws -> Timestamp? { try await base.earliestRefreshAt() }

    func openAttempts(limit: Int) async throws -> [RefreshAttempt] { try await base.openAttempts(limit: limit) }

    func pruneFinishedAttempts(before: Timestamp, limit: Int) async throws -> Int {
        try await base.pruneFinishedAttempts(before: before, limit: limit)
    }
}
