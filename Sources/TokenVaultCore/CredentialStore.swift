/// How hard a write must reach the disk before it returns.
public enum Durability: Sendable {
    /// WAL with `synchronous=NORMAL`: survives a process crash; a power loss may lose the
    /// latest commits (never corrupts).
    case normal
    /// `synchronous=FULL`: on disk before returning. Required for any write that carries a
    /// new refresh token, because the provider has already forgotten the old one.
    case full
}

/// Filter and page for listing credentials, ordered by id.
public struct CredentialQuery: Sendable, Hashable {
    public var namespace: String?
    /// Only these namespaces (a caller allowed to list some): answered by the query itself,
    /// through the namespace index, never by reading every row and filtering. Nil: all.
    public var namespaces: Set<String>?
    public var status: CredentialStatus?
    /// Return ids strictly after this one (the previous page's last id).
    public var after: CredentialID?
    public var limit: Int

    public init(
        namespace: String? = nil, namespaces: Set<String>? = nil, status: CredentialStatus? = nil,
        after: CredentialID? = nil, limit: Int = PageSize.standard
    ) {
        self.namespace = namespace
        self.namespaces = namespaces
        self.status = status
        self.after = after
        self.limit = limit
    }
}

/// Persistence of sealed credential rows and of the refresh journal. Implemented by
/// TokenVaultStorage over SQLite or PostgreSQL; it never sees a plaintext secret. Only `Vault`
/// (the ledger) holds one: everything else reads and writes rows through the vault's operations.
public protocol CredentialStore: RefreshJournal, NodeRegistry, AuthorizationStore {
    func record(_ id: CredentialID) async throws -> SealedCredentialRecord?
    /// Like `record(_:)`, but fails at once instead of waiting when the store is busy (for
    /// callers that must not block, such as an event loop).
    func recordWithoutWaiting(_ id: CredentialID) throws -> SealedCredentialRecord?
    func list(_ query: CredentialQuery) async throws -> [CredentialMetadata]
    /// How many changes of credential rows this process knows of: its own writes as they begin
    /// and end, other nodes' as they are heard. Nil while one of its writes is under way, or when
    /// nothing could tell (no cache to follow changes): a page of `list` read after taking it is
    /// as current as the store while the count is the same (`Vault.listingMark`).
    func changeCount() -> UInt64?
    /// Up to `limit` rows with id greater than `after`, in id order (verification walks).
    func records(after: CredentialID?, limit: Int) async throws -> [SealedCredentialRecord]
    /// Up to `limit` rows sealed under any term other than `term` (re-seal batches).
    func records(notSealedWith term: UInt32, limit: Int) async throws -> [SealedCredentialRecord]
    /// The audit rows `query` names, in its order.
    func auditEvents(_ query: AuditQuery) async throws -> [StoredAuditEvent]
    /// Both ends of every audit chain, as stored.
    func auditChainEnds() async throws -> [AuditChainEnd]
    /// Whether a provider answer with this call key was stored (`CredentialWriter.recordReceivedAnswer`).
    func isAnswerStored(_ callKey: String) async throws -> Bool
    /// Runs `body` in one write transaction; it commits when `body` returns and rolls back
    /// when it throws, so nothing is ever half-written.
    ///
    /// The body runs with a thread the store keeps for its transactions as its task executor, so
    /// the writer's statements block that thread alone, never the concurrency pool; it awaits
    /// the writer and nothing that waits long (the transaction holds its rows meanwhile).
    func write<Result: Sendable>(
        durability: Durability, _ body: @escaping @Sendable (any CredentialWriter) async throws -> Result
    ) async throws -> Result
}

/// The operations allowed inside a write transaction.
public protocol CredentialWriter {
    func record(_ id: CredentialID) async throws -> SealedCredentialRecord?
    /// Like `record`, but throws `VaultError.conflict` at once when another process is in the
    /// middle of writing this credential (its lock is held elsewhere) instead of waiting: a
    /// refresh another node is starting or committing, which this one skips rather than queues
    /// behind (PostgreSQL; one process writes a SQLite vault, so there it is `record`).
    func recordUnlessBusy(_ id: CredentialID) async throws -> SealedCredentialRecord?
    /// The term new seals use, read inside this transaction (a rotation by another process
    /// commits before or after it, never in between).
    func activeTerm() async throws -> UInt32
    /// Inserts or replaces the row with `record.metadata.id`.
    func save(_ record: SealedCredentialRecord) async throws
    /// Deletes the row; false when there was none.
    func delete(_ id: CredentialID) async throws -> Bool

    // The audit trail's rows and chains (written only by `Vault`, which computes the MACs).

    /// Takes `chain`'s turn until the transaction ends: appends to one chain follow each other,
    /// appends to different chains (other nodes') do not wait.
    func lockAuditChain(_ chain: String) async throws
    /// The last row of `chain`: its position and MAC (nil MAC: written before chains existed).
    func lastAuditRow(in chain: String) async throws -> (position: Int64, mac: [UInt8]?)?
    /// `count` new row ids, ascending, never given out before (even by a transaction that then
    /// rolled back, on PostgreSQL; ids may have gaps, positions within a chain may not).
    func newAuditIDs(_ count: Int) async throws -> [Int64]
    /// Inserts rows with the ids, chains, positions and MACs given, in order.
    func insertAudits(_ rows: [StoredAuditEvent]) async throws
    /// Deletes these rows; returns how many were there.
    func deleteAudits(_ ids: [Int64]) async throws -> Int
    /// Up to `limit` rows with an id greater than `after`, in id order (where pruning looks).
    func auditRows(after: Int64, limit: Int) async throws -> [StoredAuditEvent]
    func auditChainEnd(_ name: AuditChainEnd.Name, of chain: String) async throws -> AuditChainEnd?
    /// Stores a chain end, unless the one stored is further along its chain already (two nodes
    /// pruning at once must not move an anchor back).
    func setAuditChainEnd(_ end: AuditChainEnd) async throws
    /// How many rows there are, for pruning by count.
    func auditRowCount() async throws -> Int

    // Refresh journal (see `RefreshAttempt`).

    /// The open attempt for a credential, if any.
    func openAttempt(for id: CredentialID) async throws -> RefreshAttempt?
    /// Records a new open attempt. Throws `VaultError` `.conflict` when the credential already has
    /// one (another node journalled it after this transaction looked).
    func beginAttempt(_ attempt: RefreshAttempt) async throws
    /// Notes, in the transaction that stores them, that the answer of call `callKey` was stored.
    func recordReceivedAnswer(_ callKey: String, credentialID: CredentialID, at: Timestamp) async throws
    /// The beat counter of `node` in the `nodes` table as this transaction sees it (nil: no row):
    /// a takeover checks that it still has the value watched standing still.
    func nodeBeat(_ node: String) async throws -> Int64?
    /// Moves an open attempt's lease to a new owner and expiry (resuming after a crash).
    func renewLease(attemptID: String, owner: String, until: Timestamp) async throws
    /// Closes an attempt with its outcome (a short code, never a token).
    func finishAttempt(attemptID: String, state: RefreshAttempt.State, outcome: String?, at: Timestamp) async throws
    /// The fence of a refresh commit: removes the attempt if it is still open under `owner` (a
    /// succeeded attempt leaves no row: the new generation is its record); false, and no change,
    /// if another process took it over or it was closed.
    func closeSucceededAttempt(attemptID: String, owner: String) async throws -> Bool
    /// Whether the journal has a row for `attemptID`, in any state. Only a database that lost
    /// commits (a failover to a standby that lagged) forgets an attempt it journalled; the
    /// default, true, is SQLite's and the test stores'.
    func isAttemptRecorded(_ attemptID: String) async throws -> Bool
    /// The database server's timeline as this transaction sees it (`HeartbeatReading.timeline`),
    /// read once per transaction; nil where there is none (SQLite).
    func timeline() async throws -> Int64?
    /// Changes schedule and state without touching secrets; false (and no change) when the
    /// row is gone or has another generation.
    func updateSchedule(_ update: ScheduleUpdate) async throws -> Bool
    /// Runs `body` so that if it throws, only its own changes are rolled back (the rest of a
    /// group commit survives).
    func savepoint<Result>(_ body: () async throws -> Result) async throws -> Result

    // The webhook outbox (written only by `Vault`, in the transaction of the change announced).

    /// Adds outbox rows, in order (their ids ascend in this order); a row whose endpoint already
    /// has one with its message id is left out (an event announced again is the same event).
    func insertWebhookDeliveries(_ rows: [NewWebhookDelivery]) async throws
    /// Deletes `id`'s pending rows that were written with a delay and are not due yet (a
    /// `refresh_failing` whose time has not come), of `endpoint` only or of every endpoint (nil);
    /// returns the endpoints whose row went.
    func cancelDelayedWebhooks(for id: CredentialID, endpoint: String?) async throws -> Set<String>

    // Group commits (a store whose every statement is a round trip reads and writes the group's
    // rows together; one in the same process as its file has nothing to gain).

    /// Called first in a transaction with the credentials its writes claimed (said, before they
    /// ran, they are about to read and change): the store may lock and read them all now and
    /// serve the writes' reads of them from what it read. Only a hint: a write reads and changes
    /// what it must either way.
    func prefetch(_ claims: [CredentialID]) async throws
    /// Called after the group's last write, before the commit: the store writes what it kept
    /// back. Throws `WriteGroupSplit` when the group must be retried one write at a time.
    func finishGroup() async throws
}

extension CredentialStore {
    /// A store without a cache of its own cannot answer without waiting: the caller takes the
    /// path that may (`record`).
    public func recordWithoutWaiting(_ id: CredentialID) throws -> SealedCredentialRecord? {
        throw VaultError.storageUnavailable("credential \(id) is not cached here; read it from the store")
    }

    /// Audit rows with id greater than `after`, oldest first, optionally for one credential.
    public func auditEvents(after: Int64?, credentialID: CredentialID?, limit: Int) async throws -> [StoredAuditEvent] {
        try await auditEvents(AuditQuery(.oldestFirst, cursor: after, credentialID: credentialID, limit: limit))
    }
}

extension CredentialWriter {
    public func recordUnlessBusy(_ id: CredentialID) async throws -> SealedCredentialRecord? { try await record(id) }
    public func timeline() async throws -> Int64? { nil }
    public func isAttemptRecorded(_ attemptID: String) async throws -> Bool { true }
    public func prefetch(_ claims: [CredentialID]) async throws {}
    public func finishGroup() async throws {}
}

extension CredentialStore {
    /// A store that cannot tell when rows change: no page of the listing is ever kept.
    public func changeCount() -> UInt64? { nil }
}
