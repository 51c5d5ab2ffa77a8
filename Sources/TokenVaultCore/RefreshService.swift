/// What the local API asks of the refresh engine. Implemented by TokenVaultEngine; the server
/// depends only on this protocol.
public protocol RefreshService: Sendable {
    /// Refreshes `id` now, or joins the refresh already in flight for it. Never throws for a
    /// provider failure: the outcome says what happened and the credential's state records it.
    func refresh(_ id: CredentialID, reason: RefreshReason) async throws -> RefreshOutcome

    /// The refresh a token read asks for when its `min_ttl` cannot be met: joins one in flight,
    /// else refreshes at most once per credential per configured interval, and not at all when
    /// refreshing cannot meet `minimumTTL` (the outcome is then `.skipped` saying why).
    func refreshOnDemand(_ id: CredentialID, minimumTTL: Double) async throws -> RefreshOutcome

    /// `POST …/refresh`: refreshes now, unless the provider was asked about this credential less
    /// than the configured interval ago (`limits.on_demand_refresh_seconds`, counted from its last
    /// attempt on any node): then `.tooSoon` says when to come back.
    func refreshForced(_ id: CredentialID) async throws -> RefreshOutcome

    /// Revokes the credential's tokens at the provider (refresh token, then access token) and
    /// deletes it. If revocation cannot be completed the credential stays `revoke_pending` and
    /// is retried in the background, unless `force` deletes it anyway.
    func remove(_ id: CredentialID, force: Bool, audit: AuditEvent?) async throws -> RemovalOutcome

    /// Redeems an authorization code at its provider instance (paced like its refreshes), checks
    /// the id token (nonce, audience, expiry) and stores the result through the ledger, which
    /// never drops it. Provider failures are thrown as `ProviderFailure`, a failed id-token check
    /// as `VaultError`; nothing is stored then.
    func redeem(_ redemption: CodeRedemption) async throws -> RedeemedCode

    /// Starts a sign-in at a provider instance that can (`SignInProvider`): makes its state, PKCE
    /// verifier and nonce, keeps them sealed until `SignInLimits.expirySeconds`, and answers the
    /// authorization URL (pushed first where the server takes that) or the parameters.
    func startSignIn(_ start: SignInStart) async throws -> StartedSignIn

    /// Finishes a sign-in with what its redirect brought: the state must be waiting, unexpired,
    /// started for this credential by this uid; the `iss` must be the server's; the code is
    /// redeemed like `redeem`'s, with the kept verifier and nonce, into the same credential
    /// (repaired in place if it exists). The state is spent whatever the outcome.
    func finishSignIn(_ finish: SignInFinish) async throws -> RedeemedCode

    /// Per provider instance: whether refreshes are flowing, paused or misconfigured.
    func providerStates() -> [ProviderState]

    /// Counters since start-up, for `/metrics`.
    var counters: RefreshCounters { get }

    /// The configured instance `name`: its kind, and its provider (nil for a name-only or
    /// store-only instance); nil when no instance has that name.
    func providerInstance(named name: String) -> (kind: String, provider: (any TokenProvider)?)?

    /// A token derived from a credential's by RFC 8693 token exchange, from the cache while it
    /// has a minute left, else from the provider (paced like any call to it).
    func exchangeToken(_ exchange: TokenExchange) async throws -> DerivedToken

    /// Obtains a credential's first tokens by its grant at its provider instance (paced like any
    /// call to it) and stores them with the grant, which renews them from then on. A refused
    /// grant is thrown as the `ProviderFailure` it was; nothing is stored then.
    func obtain(_ acquisition: CredentialAcquisition) async throws -> CredentialMetadata
}

extension RefreshService {
    public func providerInstance(named name: String) -> (kind: String, provider: (any TokenProvider)?)? { nil }

    public func exchangeToken(_ exchange: TokenExchange) async throws -> DerivedToken {
        throw VaultError(code: .engineUnavailable, message: "no refresh engine runs: tokens cannot be exchanged")
    }

    public func obtain(_ acquisition: CredentialAcquisition) async throws -> CredentialMetadata {
        throw VaultError(code: .engineUnavailable, message: "no refresh engine runs: tokens cannot be obtained")
    }
}

/// What the engine has done since start-up.
public struct RefreshCounters: Sendable, Equatable {
    /// Successful refreshes.
    public var refreshed = 0
    /// Failed refreshes by `ProviderFailure.Kind` raw value.
    public var failed: [String: Int] = [:]
    /// Refreshes not sent (paused provider, lease held elsewhere, nothing to refresh).
    public var skipped = 0
    /// Attempts found open at start-up and resumed.
    public var recovered = 0
    public var revoked = 0
    public var revocationFailures = 0
    /// Provider answers this node held but could not store because another node took their
    /// attempt over (`Vault.RefreshCommit.leaseLost`).
    public var answersLostToTakeover = 0
    /// Refreshes by provider instance and outcome (`succeeded`, or a failure's class).
    public var byProvider: [String: [String: Int]] = [:]
    /// RFC 8693 exchanges for callers by provider instance and outcome: `derived`, `cached`, or a
    /// failure's class.
    public var tokenExchanges: [String: [String: Int]] = [:]
    /// Seconds since this node's heartbeat last went through (nil before the first).
    public var heartbeatAge: Double?
    /// Renewals that came after a gap of a third of the lease period (`LeaseKeeper`).
    public var heartbeatLapses = 0
    /// Device sign-ins this node ended with tokens stored, and without.
    public var deviceSignInsAuthorized = 0
    public var deviceSignInsFailed = 0
    /// Commits a failover lost that this node wrote back from what it keeps, and kept rows whose
    /// credential the database no longer had (`Vault.reapply`).
    public var failoverReapplied = 0
    public var failoverMissing = 0
    /// Whether refreshes wait for a failover's reconciliation now (`FailoverGuard`).
    public var failoverHold = false

    public init() {}
}

public enum RefreshReason: String, Sendable {
    /// The scheduler found `refresh_at` due.
    case scheduled
    /// A token read asked for more remaining lifetime than the token has.
    case onDemand = "on_demand"
    /// `POST .../refresh`.
    case forced
    /// An attempt left open by a crash (or held back while this node could not renew its leases).
    case recovery
    /// An attempt of this process that a storage error interrupted (`StrandedRefreshes`): resumed
    /// with the same refresh token if it is still open, never started anew.
    case resumption
}

public enum RefreshOutcome: Sendable, Equatable {
    /// New tokens are stored and visible.
    case refreshed(CredentialMetadata)
    /// The provider failed; the credential records why (status `failing` or `needs_reauth`).
    case failed(ProviderFailure, CredentialMetadata?)
    /// Nothing was sent: the credential cannot be refreshed (no refresh token, needs
    /// re-authorisation, being deleted), another process holds the lease, or the provider is
    /// paused. The text says which.
    case skipped(String, CredentialMetadata?)
    /// The provider answered but the database has not taken the new tokens yet: the ledger holds
    /// them and retries; the stored token is served while it is valid.
    case commitPending(PendingCommit)
    /// Nothing was sent: the provider was asked about this credential too recently (a forced
    /// refresh). Come back after `retryAfter` seconds; the text says why.
    case tooSoon(retryAfter: Int, String)
}

public enum RemovalOutcome: Sendable, Equatable {
    /// Revoked where the provider supports it, and deleted.
    case deleted(revoked: Bool)
    /// Revocation failed; the credential is `revoke_pending` and will be retried.
    case revokePending(CredentialMetadata, ProviderFailure)
}

/// A provider instance as health and metrics report it.
public struct ProviderState: Sendable, Equatable {
    public enum Condition: String, Sendable, CaseIterable {
        /// Refreshes flow.
        case ok
        /// Recent transient failures opened the circuit breaker; probing.
        case circuitOpen = "circuit_open"
        /// The client registration was rejected; paused, probed slowly.
        case misconfigured
        /// No endpoint configured; its credentials cannot be refreshed.
        case notConfigured = "not_configured"
    }

    public var name: String
    public var kind: String
    public var condition: Condition
    public var detail: String?
    public var inFlight: Int

    public init(name: String, kind: String, condition: Condition, detail: String? = nil, inFlight: Int = 0) {
        self.name = name
        self.kind = kind
        self.condition = condition
        self.detail = detail
        self.inFlight = inFlight
    }
}
