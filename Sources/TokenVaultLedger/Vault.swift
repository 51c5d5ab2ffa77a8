import Foundation
import Synchronization
import TokenVaultCore

/// The ledger: the one way to read or write a credential row.
///
/// It owns the store (ciphertext only), the sealer, the refresh planners, the change feed and
/// group commit. Every write of a row, whoever asks for it (the API, the refresh engine, the
/// command line, the benchmarks), is one of its operations: put, bulk import, received tokens
/// from a code exchange, journalling a refresh attempt, committing a refresh, a schedule change,
/// delete and purge (`Vault+Writes.swift`, `Vault+Refresh.swift`), re-sealing for key rotation
/// and verification (`Vault+Keys.swift`). Each builds the next generation with `NextGeneration`,
/// seals under the term that is active inside its own transaction, and publishes its event
/// after the commit.
///
/// Tokens a provider issued are never dropped: if their commit fails they are held in locked
/// memory and the commit is retried with backoff for as long as the process lives
/// (`Vault+PendingCommits.swift`).
///
/// Reads and writes are `async`: the store does its blocking on threads of its own. The fast
/// path's `credentialWithoutWaiting` is synchronous, for an event loop: it never waits.
public final class Vault: Sendable {
    public struct Options: Sendable {
        /// First wait before a failed commit of received tokens is tried again; it doubles per
        /// failure up to `commitRetryCap`.
        public var commitRetryBase: Double
        public var commitRetryCap: Double
        /// Writes per group-commit transaction at most.
        public var maximumGroup: Int
        /// Group-commit transactions committed at once at most.
        public var concurrentTransactions: Int
        /// Whether writes that claim no credential share group-commit transactions (not on a
        /// database several processes write: `WriteCoalescer`).
        public var groupsUnclaimedWrites: Bool
        /// The audit chain this process appends to (`AuditChain`): "" on a vault one process
        /// writes, the node's identity on a shared one.
        public var auditChain: String

        public init(
            commitRetryBase: Double = 0.05, commitRetryCap: Double = 30, maximumGroup: Int = 256,
            concurrentTransactions: Int = 1, groupsUnclaimedWrites: Bool = true, auditChain: String = ""
        ) {
            self.commitRetryBase = commitRetryBase
            self.commitRetryCap = commitRetryCap
            self.maximumGroup = maximumGroup
            self.concurrentTransactions = concurrentTransactions
            self.groupsUnclaimedWrites = groupsUnclaimedWrites
            self.auditChain = auditChain
        }
    }

    /// Internal to Core: nothing outside the ledger touches rows or keys directly.
    let store: any CredentialStore
    let sealer: any Sealer
    public let clock: any VaultClock
    /// The planner for providers without settings of their own.
    private let defaultPlanner: RefreshPlanner
    /// The provider instances in force (their planners: lifetime share, margin, jitter, default
    /// lifetime), replaced whole by a reload through the engine (`ProviderRouting.install`).
    private let table: Mutex<ProviderTable>
    /// Every committed change is published here, for the watch and event streams.
    public let events: ChangeFeed
    let writes: WriteCoalescer
    let pending = PendingCommits()
    let options: Options
    private let observerBox = Mutex<(any LedgerObserver)?>(nil)
    private let retentionBox = Mutex<(any AnswerRetention)?>(nil)
    /// Whether refreshes may be journalled after the database's timeline changed
    /// (`Vault+Failover.swift`).
    public let failover = FailoverGuard()
    /// Attempts journalled here and not closed yet (`Vault+Failover.swift`).
    let journalled = JournalledAttempts()
    /// The load of key terms under way, which callers at the same moment share (`loadKeyTerms`).
    private let keyTermLoad = Mutex<Task<Void, any Error>?>(nil)
    /// Which endpoints hear of which events (`Vault+Webhooks.swift`).
    let webhookRoutes = Mutex(WebhookRoutes.none)

    public init(
        store: any CredentialStore, sealer: any Sealer, clock: any VaultClock = SystemClock(),
        planner: RefreshPlanner = RefreshPlanner(), providers: ProviderTable = .empty,
        events: ChangeFeed = ChangeFeed(), options: Options = Options()
    ) {
        self.store = store
        self.sealer = sealer
        self.clock = clock
        self.defaultPlanner = planner
        self.table = Mutex(providers)
        self.events = events
        self.options = options
        writes = WriteCoalescer(
            store: store, maximumBatch: options.maximumGroup,
            transactions: options.concurrentTransactions, groupsUnclaimed: options.groupsUnclaimedWrites)
    }

    /// Who hears about held commits (the daemon logs them). One observer; a later call replaces it.
    public func observe(_ observer: any LedgerObserver) { observerBox.withLock { $0 = observer } }

    var observer: (any LedgerObserver)? { observerBox.withLock { $0 } }

    /// Where committed tokens are kept for a while on this node's disk, to be re-applied after a
    /// failover that lost their commit (`AnswerRetention`); none: nothing is kept.
    public func retainAnswers(in retention: (any AnswerRetention)?) { retentionBox.withLock { $0 = retention } }

    public var retention: (any AnswerRetention)? { retentionBox.withLock { $0 } }

    /// The provider table in force: take it once per request and use what was taken.
    public var providers: ProviderTable { table.withLock { $0 } }

    /// The planner of `provider` in `table` (the one a request or refresh took), or in the table
    /// in force; the default planner for a name without settings.
    public func planner(for provider: String, in table: ProviderTable? = nil) -> RefreshPlanner {
        (table ?? providers).planner(for: provider) ?? defaultPlanner
    }

    /// Puts a table in force for the next request. Only the engine's `install` calls this (in
    /// the same step as its own slots); a vault without an engine (tools, tests) directly.
    public func install(_ providers: ProviderTable) { table.withLock { $0 = providers } }

    // MARK: Reads

    /// Metadata only; nothing is decrypted.
    public func metadata(_ id: CredentialID) async throws -> CredentialMetadata {
        guard let record = try await store.record(id) else { throw VaultError.notFound(id) }
        return withPending(record.metadata)
    }

    /// `metadata(_:)`, failing at once instead of waiting when the store is busy (for a caller
    /// on an event loop, which then hands the request to the router).
    public func metadataWithoutWaiting(_ id: CredentialID) throws -> CredentialMetadata {
        guard let record = try store.recordWithoutWaiting(id) else { throw VaultError.notFound(id) }
        return withPending(record.metadata)
    }

    /// The credential with its secrets opened: all of them, or only `fields` (the access token
    /// is always opened). Serving a token opens just what it returns, so the refresh token is
    /// not decrypted into memory on every read.
    public func credential(_ id: CredentialID, opening fields: Set<SealedField> = Set(SealedField.allCases))
        async throws -> Credential
    {
        guard let record = try await store.record(id) else { throw VaultError.notFound(id) }
        if !sealer.hasKey(for: record.sealTerm) {
            try await loadKeyTerms()
            // Still unknown: no term of this vault seals it (the keyring would read again).
            guard sealer.hasKey(for: record.sealTerm) else {
                throw VaultError(
                    code: .unknownKeyTerm,
                    message: "credential \(id): \(VaultError.unknownKeyTerm(record.sealTerm).message)")
            }
        }
        return Credential(metadata: withPending(record.metadata), secrets: try open(record, fields: fields))
    }

    /// Like `credential(_:opening:)`, but fails at once instead of waiting when the store is
    /// busy: for a caller on an event loop, which then hands the request to the router.
    public func credentialWithoutWaiting(_ id: CredentialID, opening fields: Set<SealedField>) throws -> Credential {
        guard let record = try store.recordWithoutWaiting(id) else { throw VaultError.notFound(id) }
        // A term another process added since this one loaded its keys (a key rotation on another
        // node): loading it reads the store, which `credential(_:opening:)` may do.
        guard sealer.hasKey(for: record.sealTerm) else {
            throw VaultError.storageUnavailable("data key term \(record.sealTerm) is not loaded yet")
        }
        return Credential(metadata: withPending(record.metadata), secrets: try open(record, fields: fields))
    }

    public func list(_ query: CredentialQuery) async throws -> [CredentialMetadata] {
        try await store.list(query).map(withPending)
    }

    /// Taken before `list` to keep the page it returns (rendered) for as long as `isCurrent`
    /// holds; nil when a page read now must not be kept: a write under way, a commit held, or a
    /// store that cannot tell when rows change.
    public func listingMark() -> ListingMark? {
        let holdsBegun = pending.begunCount
        guard pending.count == 0, let changes = store.changeCount() else { return nil }
        return ListingMark(changes: changes, holdsBegun: holdsBegun)
    }

    /// Whether a page read under `mark` is still what `list` would return: the mark taken now
    /// would be the same.
    public func isCurrent(_ mark: ListingMark) -> Bool { listingMark() == mark }

    /// Up to `limit` credentials due for the scheduler (`refresh_at <= now`), earliest first,
    /// besides those in `skipping` (`RefreshJournal.dueCredentials`).
    public func dueCredentials(
        at now: Timestamp, limit: Int, skipping: Set<CredentialID> = []
    ) async throws -> [ScheduledCredential] {
        try await store.dueCredentials(at: now, limit: limit, skipping: skipping)
    }

    /// The earliest `refresh_at` of any credential, or nil when nothing is scheduled.
    public func earliestRefreshAt() async throws -> Timestamp? { try await store.earliestRefreshAt() }

    /// Refresh attempts still open (interrupted by a crash, or in flight in another process).
    public func openAttempts(limit: Int) async throws -> [RefreshAttempt] {
        try await store.openAttempts(limit: limit)
    }

    /// Deletes up to `limit` closed journal entries finished before `before`; returns how many.
    public func pruneFinishedAttempts(before: Timestamp, limit: Int) async throws -> Int {
        try await store.pruneFinishedAttempts(before: before, limit: limit)
    }

    /// A one-way fingerprint of a secret, for the journal (never the secret itself).
    public func fingerprint(_ secret: SecretBytes) -> String { sealer.fingerprint(secret) }

    /// The held commit of `id`, if a provider's answer for it is waiting for the database.
    public func pendingCommit(for id: CredentialID) -> PendingCommit? { pending.status(id) }

    /// Provider answers held in memory because the database has not taken them yet.
    public var pendingCommitCount: Int { pending.count }

    /// Why the latest commit of received tokens failed, while any answer is still held: what
    /// health says keeps the vault from writing (a full disk, a database that refuses writes).
    public var heldCommitError: String? { pending.count > 0 ? pending.snapshot.lastFailure : nil }

    /// Failed commits of received tokens since start-up, and held answers committed since.
    public var commitCounters: (failures: Int, recovered: Int) {
        let totals = pending.snapshot
        return (totals.failures, totals.recovered)
    }

    private func withPending(_ metadata: CredentialMetadata) -> CredentialMetadata {
        guard let held = pending.status(metadata.id) else { return metadata }
        var metadata = metadata
        metadata.pendingCommit = held
        return metadata
    }

    // MARK: Sealing (private: only the ledger seals and opens)

    /// Seals every secret field of a row under `term`, each bound to (id, generation, field).
    func seal(_ secrets: CredentialSecrets, metadata: CredentialMetadata, term: UInt32) throws
        -> SealedCredentialRecord
    {
        func sealed(_ value: SecretBytes?, _ field: SealedField) throws -> [UInt8]? {
            guard let value else { return nil }
            return try sealer.seal(
                value, associatedData: field.associatedData(id: metadata.id, generation: metadata.generation),
                term: term)
        }
        return SealedCredentialRecord(
            metadata: metadata, sealTerm: term,
            accessToken: try sealed(secrets.accessToken, .accessToken)!,
            refreshToken: try sealed(secrets.refreshToken, .refreshToken),
            idToken: try sealed(secrets.idToken, .idToken),
            extras: try sealed(secrets.extras, .extras))
    }

    /// Opens the sealed fields of a row (every one unless `fields` says otherwise; the access
    /// token always); any failure names the credential and the field.
    func open(_ record: SealedCredentialRecord, fields: Set<SealedField> = Set(SealedField.allCases)) throws
        -> CredentialSecrets
    {
        func opened(_ field: SealedField) throws -> SecretBytes? {
            guard field == .accessToken || fields.contains(field), let envelope = record[field] else { return nil }
            let associatedData = field.associatedData(id: record.metadata.id, generation: record.metadata.generation)
            do {
                return try sealer.open(envelope, associatedData: associatedData)
            } catch let error as VaultError {
                throw VaultError(
                    code: error.code,
                    message: "credential \(record.metadata.id), field \(field.rawValue): \(error.message)")
            }
        }
        return CredentialSecrets(
            accessToken: try opened(.accessToken)!, refreshToken: try opened(.refreshToken),
            idToken: try opened(.idToken), extras: try opened(.extras))
    }

    /// Loads the data key terms another process added since this one loaded its keys (a read of
    /// `key_terms`: another node rotated, or a held commit met an unknown term), on a thread of
    /// its own, since the read may wait for the database and this is called from the concurrency
    /// pool. It happens once per term another node adds; callers at the same moment share one load.
    func loadKeyTerms() async throws {
        let load = keyTermLoad.withLock { current -> Task<Void, any Error> in
            if let current { return current }
            let sealer = sealer
            let task = Task<Void, any Error> {
                try await withCheckedThrowingContinuation { (loaded: CheckedContinuation<Void, any Error>) in
                    Thread.detachNewThread { loaded.resume(with: Result { try sealer.reload() }) }
                }
            }
            current = task
            return task
        }
        defer { keyTermLoad.withLock { if $0 == load { $0 = nil } } }
        try await load.value
    }

    func publish(
        _ kind: CredentialEvent.Kind, _ id: CredentialID, _ metadata: CredentialMetadata?, reason: String? = nil
    ) {
        events.publish(
            CredentialEvent(kind: kind, id: id, at: clock.now, metadata: metadata.map(withPending), reason: reason))
    }
}

extension Vault {
    /// A change another process sharing the database made (a node of a PostgreSQL vault): this
    /// process's `watch` and `events` streams get it too, with the row as it is now (none when it
    /// was deleted). Nothing is decrypted, and nothing is read when no stream wants the event
    /// (every node hears of every other node's refreshes).
    public func publishChangeMadeElsewhere(_ kind: CredentialEvent.Kind, _ id: CredentialID) async {
        guard events.hasSubscriber(for: kind, id) else { return }
        var metadata: CredentialMetadata?
        if kind != .deleted {
            metadata = try? await store.record(id)?.metadata
            // Gone again by the time it was read: its own deletion follows.
            if metadata == nil { return }
        }
        publish(kind, id, metadata)
    }
}
