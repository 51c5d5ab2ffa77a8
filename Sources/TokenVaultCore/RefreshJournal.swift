/// The scheduler's and the journal's reads. Implemented by TokenVaultStorage through the
/// `refresh_at` index: nothing here scans every credential.
public protocol RefreshJournal: Sendable {
    /// Up to `limit` credentials with `refresh_at <= now`, earliest first, besides those in
    /// `skipping` (this process's refreshes in flight, due until journalled: a scan under load
    /// would otherwise read them all again each time). On a database several nodes share, those
    /// another node's scan returned moments ago are left out, and those returned are claimed for
    /// this node for a few seconds (a claim spreads work, it fences nothing: the journal's lease
    /// does).
    func dueCredentials(at now: Timestamp, limit: Int, skipping: Set<CredentialID>) async throws
        -> [ScheduledCredential]
    /// The earliest `refresh_at` of any credential, or nil when nothing is scheduled.
    func earliestRefreshAt() async throws -> Timestamp?
    /// Attempts still open (interrupted by a crash, or in flight in another process).
    func openAttempts(limit: Int) async throws -> [RefreshAttempt]
    /// Deletes up to `limit` closed attempts finished before `before`; returns how many.
    func pruneFinishedAttempts(before: Timestamp, limit: Int) async throws -> Int
}

extension RefreshJournal {
    /// Up to `limit` due credentials, skipping none.
    public func dueCredentials(at now: Timestamp, limit: Int) async throws -> [ScheduledCredential] {
        try await dueCredentials(at: now, limit: limit, skipping: [])
    }
}

/// A credential the scheduler must act on.
public struct ScheduledCredential: Sendable, Equatable {
    public var id: CredentialID
    public var refreshAt: Timestamp
    public var status: CredentialStatus

    public init(id: CredentialID, refreshAt: Timestamp, status: CredentialStatus) {
        self.id = id
        self.refreshAt = refreshAt
        self.status = status
    }
}

/// A change to a credential's schedule and state that leaves its secrets alone (a failure, a
/// deferral, a status change). Written without re-sealing anything.
public struct ScheduleUpdate: Sendable, Equatable {
    public var id: CredentialID
    /// Applied only if the row still has this generation (a refresh or put in between wins).
    public var generation: Int64
    /// Applied only if the row still has this status (nil: whatever it has): an update planned
    /// from an earlier read (a postponement, a failure's backoff) must not undo a status another
    /// process set since at the same generation (a removal pending, a sign-in needed).
    public var expectedStatus: CredentialStatus?
    public var status: CredentialStatus
    public var refreshAt: Timestamp?
    public var lastError: CredentialFailure?
    public var refreshFailures: Int
    public var updatedAt: Timestamp

    public init(
        id: CredentialID, generation: Int64, expectedStatus: CredentialStatus? = nil, status: CredentialStatus,
        refreshAt: Timestamp?, lastError: CredentialFailure?, refreshFailures: Int, updatedAt: Timestamp
    ) {
        self.id = id
        self.generation = generation
        self.expectedStatus = expectedStatus
        self.status = status
        self.refreshAt = refreshAt
        self.lastError = lastError
        self.refreshFailures = refreshFailures
        self.updatedAt = updatedAt
    }

    /// Whether the update applies to a row that reads `metadata`: the rule every store's
    /// `updateSchedule` keeps (in its statement, or in memory for a group commit).
    public func applies(to metadata: CredentialMetadata) -> Bool {
        metadata.generation == generation && (expectedStatus == nil || metadata.status == expectedStatus)
    }
}

extension CredentialMetadata {
    /// What the row reads after `update` was applied to it (the fields `updateSchedule` writes;
    /// the generation check is the caller's).
    public mutating func apply(_ update: ScheduleUpdate) {
        status = update.status
        refreshAt = update.refreshAt
        lastError = update.lastError
        refreshFailures = update.refreshFailures
        updatedAt = update.updatedAt
    }
}
