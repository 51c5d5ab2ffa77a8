/// Everything about a credential that is not secret: what the API's metadata calls return
/// and what the database stores in plain columns.
public struct CredentialMetadata: Sendable, Equatable {
    public var id: CredentialID
    public var provider: String
    public var kind: CredentialKind
    public var subject: String?
    public var status: CredentialStatus
    /// Incremented on every write of new tokens; bound into every sealed field's associated data.
    public var generation: Int64
    public var tokenType: String?
    public var scopes: [String]
    public var labels: [String: String]
    public var issuedAt: Timestamp
    public var expiresAt: Timestamp?
    public var refreshAt: Timestamp?
    public var refreshTokenExpiresAt: Timestamp?
    public var lastError: CredentialFailure?
    /// Refresh failures since the last success (drives the backoff).
    public var refreshFailures: Int
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    public var hasRefreshToken: Bool
    public var hasIDToken: Bool
    /// The grant the vault renews this credential by itself (client credentials, or a token
    /// exchange of another credential's token); nil for tokens a person's sign-in gave, renewed
    /// by their refresh token if any.
    public var grant: CredentialGrant?
    /// New tokens a provider issued that the database has not taken yet (held in memory and
    /// retried). Never stored: `Vault` fills it in from its registry when it reads a row.
    public var pendingCommit: PendingCommit?

    /// Whether the vault can get this credential new tokens: by its refresh token or its grant.
    public var isRenewable: Bool { kind == .oauth2 && (hasRefreshToken || grant != nil) }

    /// How long the current tokens live as issued (`expires_at - issued_at`), if known.
    public var lifetime: Double? { expiresAt.map { $0.seconds - issuedAt.seconds } }

    /// When the provider was last asked for this credential's tokens: its last refresh (or the
    /// put that stored it) or its last failure, whichever is later. Forced refreshes are rate
    /// limited from here, so a failing credential cannot be forced in a loop.
    public var lastRefreshAttempt: Timestamp { max(issuedAt, lastError?.at ?? issuedAt) }

    public init(
        id: CredentialID, provider: String, kind: CredentialKind, subject: String? = nil,
        status: CredentialStatus = .active, generation: Int64, tokenType: String? = nil, scopes: [String] = [],
        labels: [String: String] = [:], issuedAt: Timestamp, expiresAt: Timestamp? = nil, refreshAt: Timestamp? = nil,
        refreshTokenExpiresAt: Timestamp? = nil, lastError: CredentialFailure? = nil, refreshFailures: Int = 0,
        createdAt: Timestamp, updatedAt: Timestamp, hasRefreshToken: Bool, hasIDToken: Bool,
        grant: CredentialGrant? = nil, pendingCommit: PendingCommit? = nil
    ) {
        self.id = id
        self.provider = provider
        self.kind = kind
        self.subject = subject
        self.status = status
        self.generation = generation
        self.tokenType = tokenType
        self.scopes = scopes
        self.labels = labels
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.refreshAt = refreshAt
        self.refreshTokenExpiresAt = refreshTokenExpiresAt
        self.lastError = lastError
        self.refreshFailures = refreshFailures
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.hasRefreshToken = hasRefreshToken
        self.hasIDToken = hasIDToken
        self.grant = grant
        self.pendingCommit = pendingCommit
    }
}

/// The last failure recorded against a credential (never contains a token).
public struct CredentialFailure: Sendable, Equatable {
    public var code: String
    public var message: String
    public var at: Timestamp

    public init(code: String, message: String, at: Timestamp) {
        self.code = code
        self.message = message
        self.at = at
    }
}
