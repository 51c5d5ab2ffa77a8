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

    func record(_ id: CredentialID) throws -> SealedCredentialRecord? {
        counters.withLock { $0.recordReads += 1 }
        return try base.record(id)
    }

    func list(_ query: CredentialQuery) throws -> [CredentialMetadata] { try base.list(query) }

    func records(after: CredentialID?, limit: Int) throws -> [SealedCredentialRecord] {
        try base.records(after: after, limit: limit)
    }

    func records(notSealedWith term: UInt32, limit: Int) throws -> [SealedCredentialRecord] {
        try base.records(notSealedWith: term, limit: limit)
    }

    func auditEvents(_ query: AuditQuery) throws -> [StoredAuditEvent] { try base.auditEvents(query) }

    func auditChainEnds() throws -> [AuditChainEnd] { try base.auditChainEnds() }

    func write<Result>(durability requested: Durability, _ body: (any CredentialWriter) throws -> Result) throws
        -> Result
    {
        let effective = durability ?? requested
        let started = monotonicSeconds()
        var bodySeconds = 0.0
        var batch = 0
        defer {
            let total = monotonicSeconds() - started
            counters.withLock {
                $0.transactions += 1
                if effective == .full { $0.fullTransactions += 1 }
                $0.writeSeconds += total
                $0.bodySeconds += bodySeconds
                if batch > 0 { $0.batches.record(UInt64(batch)) }
            }
        }
        return try base.write(durability: effective) { writer in
            let bodyStarted = monotonicSeconds()
            let counting = CountingWriter(writer)
            defer {
                bodySeconds = monotonicSeconds() - bodyStarted
                batch = counting.savepoints
            }
            return try body(counting)
        }
    }

    // MARK: NodeRegistry

    func heartbeat(_ beat: NodeBeat) throws -> HeartbeatReading { try base.heartbeat(beat) }
    func nodes() throws -> [NodeRecord] { try base.nodes() }
    func isAnswerStored(_ callKey: String) throws -> Bool { try base.isAnswerStored(callKey) }
    func forgetNode(_ node: String) throws -> Int? { try base.forgetNode(node) }

    // MARK: RefreshJournal

    func dueCredentials(at now: Timestamp, limit: Int, skipping: Set<CredentialID>) throws -> [ScheduledCredential] {
        let started = monotonicSeconds()
        let due = try base.dueCredentials(at: now, limit: limit, skipping: skipping)
        let elapsed = monotonicSeconds() - started
        counters.withLock {
            $0.dueQueries += 1
            $0.dueRows += due.count
            $0.dueSeconds += elapsed
        }
        return due
    }

    func earliestRefreshAt() throws -> Timestamp? { try base.earliestRefreshAt() }

    func openAttempts(limit: Int) throws -> [RefreshAttempt] { try base.openAttempts(limit: limit) }

    func pruneFinishedAttempts(before: Timestamp, limit: Int) throws -> Int {
        try base.pruneFinishedAttempts(before: before, limit: limit)
    }
}
