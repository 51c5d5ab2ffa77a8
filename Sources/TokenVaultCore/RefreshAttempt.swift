/// One row of the refresh journal: written durably before the provider is called, closed in
/// the transaction that stores the new tokens. An attempt still open at start-up means the
/// answer may have been lost; it is retried with the same refresh token.
public struct RefreshAttempt: Sendable, Equatable {
    public enum State: String, Sendable {
        case open, succeeded, failed, abandoned
    }

    public var attemptID: String
    public var credentialID: CredentialID
    /// The credential generation the attempt refreshes; a newer generation makes it moot.
    public var generation: Int64
    /// A one-way fingerprint of the refresh token presented (never the token).
    public var refreshTokenFingerprint: String
    /// Who holds the lease: `<node>/<incarnation>` of the refreshing daemon (`LeaseName`). The
    /// lease lasts while that node's heartbeat goes on (`NodeHeartbeat`).
    public var leaseOwner: String
    /// When the scheduler comes back to the credential if nothing closes the attempt (its
    /// `refresh_at` is moved there). Informational for leases: they are never judged by time.
    public var leaseExpiresAt: Timestamp
    public var startedAt: Timestamp

    public init(
        attemptID: String, credentialID: CredentialID, generation: Int64, refreshTokenFingerprint: String,
        leaseOwner: String, leaseExpiresAt: Timestamp, startedAt: Timestamp
    ) {
        self.attemptID = attemptID
        self.credentialID = credentialID
        self.generation = generation
        self.refreshTokenFingerprint = refreshTokenFingerprint
        self.leaseOwner = leaseOwner
        self.leaseExpiresAt = leaseExpiresAt
        self.startedAt = startedAt
    }
}

/// What to do when a process wants to refresh a credential and the journal may already hold
/// an open attempt for it. Pure, so every case is unit-tested.
public enum LeaseDecision: Sendable, Equatable {
    /// No open attempt: start a new one.
    case start
    /// An open attempt for the same generation whose holder is gone (this process, an earlier
    /// run of this node, a node whose heartbeat was watched standing still for a lease period,
    /// or one an operator forgot): take it over and present the same token.
    case resume(RefreshAttempt)
    /// An open attempt for an older generation (the credential was replaced since): close it
    /// as abandoned, then start.
    case supersede(RefreshAttempt)
    /// Another node holds the lease and is not known to be gone: keep off.
    case busy

    /// `isOwnerGone` answers whether a lease owner other than `owner` is known to be gone. No
    /// clock is read: a lease is never judged by a time one node wrote and another compares.
    public static func decide(
        existing: RefreshAttempt?, generation: Int64, owner: String, isOwnerGone: (String) async throws -> Bool
    ) async rethrows -> LeaseDecision {
        guard let existing else { return .start }
        let holderGone = existing.leaseOwner == owner ? true : try await isOwnerGone(existing.leaseOwner)
        guard holderGone else { return .busy }
        return existing.generation == generation ? .resume(existing) : .supersede(existing)
    }
}
