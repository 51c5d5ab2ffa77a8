import Synchronization
import TokenVaultCore

/// A real store whose next N commits that write a credential row fail (after their body ran, so
/// the transaction rolls back, as a refused `COMMIT` would): the test double for a database that
/// refuses a refresh's commit after the provider has answered. Journal writes, schedule changes
/// and reads pass through, unless their acknowledgement is to be lost (`loseNextJournalAcks`).
public final class FailingStore: CredentialStore, Sendable {
    private let base: any CredentialStore
    private let remaining = Mutex(0)
    private let acksToLose = Mutex(0)
    private let failed = Mutex(0)
    private let heartbeatsFail = Mutex(false)

    public init(_ base: any CredentialStore) { self.base = base }

    /// The next `count` transactions that save a credential row fail.
    public func failNextRowCommits(_ count: Int) { remaining.withLock { $0 = count } }

    /// The next `count` transactions that journal a refresh attempt commit, then fail as a
    /// connection lost before `COMMIT` was acknowledged would: the attempt is journalled (and the
    /// credential's `refresh_at` moved to the lease's end) but the caller sees an error.
    public func loseNextJournalAcks(_ count: Int) { acksToLose.withLock { $0 = count } }

    /// While true, every heartbeat fails as the database being unreachable would.
    public func failHeartbeats(_ fail: Bool) { heartbeatsFail.withLock { $0 = fail } }

    /// Row commits failed so far.
    public var failures: Int { failed.withLock { $0 } }

    public func write<Result: Sendable>(
        durability: Durability, _ body: @escaping @Sendable (any CredentialWriter) async throws -> Result
    ) async throws -> Result {
        let (result, journalled) = try await base.write(durability: durability) { [self] writer in
            let spy = SavingSpy(writer)
            let result = try await body(spy)
            let fail = remaining.withLock { count -> Bool in
                guard spy.saved, count > 0 else { return false }
                count -= 1
                return true
            }
            if fail {
                failed.withLock { $0 += 1 }
                throw VaultError.storageUnavailable("injected commit failure")
            }
            return (result, spy.journalled)
        }
        let lose = acksToLose.withLock { count -> Bool in
            guard journalled, count > 0 else { return false }
            count -= 1
            return true
        }
        if lose { throw VaultError.storageUnavailable("injected loss of the connection after COMMIT") }
        return result
    }

    public func record(_ id: CredentialID) async throws -> SealedCredentialRecord? { try await base.record(id) }
    public func recordWithoutWaiting(_ id: CredentialID) throws -> SealedCredentialRecord? {
        try base.recordWithoutWaiting(id)
    }
    public func list(_ query: CredentialQuery) async throws -> [CredentialMetadata] { try await base.list(query) }
    public func changeCount() -> UInt64? { base.changeCount() }
    public func records(after: CredentialID?, limit: Int) async throws -> [SealedCredentialRecord] {
        try await base.records(after: after, limit: limit)
    }
    public func records(notSealedWith term: UInt32, limit: Int) async throws -> [SealedCredentialRecord] {
        try await base.records(notSealedWith: term, limit: limit)
    }
    public func auditEvents(_ query: AuditQuery) async throws -> [StoredAuditEvent] {
        try await base.auditEvents(query)
    }
    public func auditChainEnds() async throws -> [AuditChainEnd] { try await base.auditChainEnds() }
    public func dueCredentials(at now: Timestamp, limit: Int, skipping: Set<CredentialID>) async throws
        -> [ScheduledCredential]
    {
        try await base.dueCredentials(at: now, limit: limit, skipping: skipping)
    }
    public func earliestRefreshAt() async throws -> Timestamp? { try await base.earliestRefreshAt() }
    public func openAttempts(limit: Int) async throws -> [RefreshAttempt] { try await base.openAttempts(limit: limit) }
    public func pruneFinishedAttempts(before: Timestamp, limit: Int) async throws -> Int {
        try await base.pruneFinishedAttempts(before: before, limit: limit)
    }
    public func heartbeat(_ beat: NodeBeat) async throws -> HeartbeatReading {
        if heartbeatsFail.withLock({ $0 }) { throw VaultError.storageUnavailable("injected heartbeat failure") }
        return try await base.heartbeat(beat)
    }
    public func nodes() async throws -> [NodeRecord] { try await base.nodes() }
    public func isAnswerStored(_ callKey: String) async throws -> Bool { try await base.isAnswerStored(callKey) }
    public func forgetNode(_ node: String) async throws -> Int? { try await base.forgetNode(node) }
    public func addAuthorization(_ row: SealedAuthorization, limit: Int, now: Timestamp) async throws -> Bool {
        try await base.addAuthorization(row, limit: limit, now: now)
    }
    public func takeAuthorization(key: String) async throws -> SealedAuthorization? {
        try await base.takeAuthorization(key: key)
    }
    public func claimDevicePolls(now: Timestamp, claim: String, until: Timestamp, limit: Int) async throws
        -> [SealedAuthorization]
    {
        try await base.claimDevicePolls(now: now, claim: claim, until: until, limit: limit)
    }
    public func scheduleDevicePoll(key: String, claim: String, interval: Int, at: Timestamp) async throws -> Bool {
        try await base.scheduleDevicePoll(key: key, claim: claim, interval: interval, at: at)
    }
    public func removeDevicePoll(key: String, ended: SignInEnd?) async throws -> Bool {
        try await base.removeDevicePoll(key: key, ended: ended)
    }
    public func devicePolls(for credentialID: CredentialID) async throws -> [SealedAuthorization] {
        try await base.devicePolls(for: credentialID)
    }

    public func waitingAuthorizations(uid: UInt32, now: Timestamp) async throws -> Int {
        try await base.waitingAuthorizations(uid: uid, now: now)
    }
}

/// Passes every call through and notes whether a row was saved or an attempt journalled.
private final class SavingSpy: ForwardingWriter {
    var saved = false
    var journalled = false

    override func beginAttempt(_ attempt: RefreshAttempt) async throws {
        journalled = true
        try await base.beginAttempt(attempt)
    }

    override func renewLease(attemptID: String, owner: String, until: Timestamp) async throws {
        journalled = true
        try await base.renewLease(attemptID: attemptID, owner: owner, until: until)
    }

    override func save(_ record: SealedCredentialRecord) async throws {
        saved = true
        try await base.save(record)
    }
}
