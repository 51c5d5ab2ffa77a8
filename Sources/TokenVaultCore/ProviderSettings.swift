/// One provider instance from the daemon's configuration (`providers.<name>`): what the
/// engine needs to schedule and pace its refreshes, plus the kind-specific options that
/// TokenVaultProviders validates and turns into a `TokenProvider`.
public struct ProviderSettings: Sendable, Equatable {
    /// The instance name credentials use as `provider` (e.g. `tinkoff-id`, `acme`).
    public var name: String
    /// `oauth2`, `tinkoff-id`, `sber-id`, `esia` or `ebs`.
    public var kind: String
    public var planner: RefreshPlanner
    public var limits: ProviderLimits
    /// How EBS `expired` values of this instance's credentials are read.
    public var expiredUnit: ExpiredUnit = .seconds
    /// Kind-specific options (endpoints, client, TLS), as written in the config file.
    public var options: [String: JSONValue]

    public init(
        name: String, kind: String, planner: RefreshPlanner = RefreshPlanner(),
        limits: ProviderLimits = ProviderLimits(),
        options: [String: JSONValue] = [:]
    ) {
        self.name = name
        self.kind = kind
        self.planner = planner
        self.limits = limits
        self.options = options
    }
}

/// How hard the engine may lean on one provider instance.
public struct ProviderLimits: Sendable, Equatable {
    /// Refresh calls in flight at once.
    public var concurrency: Int
    /// Token bucket: sustained calls per second and the burst allowed.
    public var ratePerSecond: Double
    public var burst: Int
    /// Consecutive transient failures that open the circuit breaker, and how long it stays open
    /// before one probe is let through.
    public var breakerThreshold: Int
    public var breakerCooldown: Double
    /// After `invalid_client` and friends: how often one probe is let through.
    public var misconfiguredProbeInterval: Double
    /// How many different credentials must be refused as misconfigured (within one probe
    /// interval) before the whole instance is paused: one credential's `invalid_scope` says
    /// nothing about the client registration, and must not stop everyone else's refreshes.
    public var misconfiguredCredentials: Int
    /// Backoff for transient failures.
    public var retry: RetryPolicy

    public init(
        concurrency: Int = 8, ratePerSecond: Double = 20, burst: Int = 20, breakerThreshold: Int = 5,
        breakerCooldown: Double = 30, misconfiguredProbeInterval: Double = 300, misconfiguredCredentials: Int = 3,
        retry: RetryPolicy = RetryPolicy()
    ) {
        self.concurrency = concurrency
        self.ratePerSecond = ratePerSecond
        self.burst = burst
        self.breakerThreshold = breakerThreshold
        self.breakerCooldown = breakerCooldown
        self.misconfiguredProbeInterval = misconfiguredProbeInterval
        self.misconfiguredCredentials = max(1, misconfiguredCredentials)
        self.retry = retry
    }
}

extension ProviderSettings {
    /// Whether `other` calls the same provider the same way (kind and options: endpoints, client,
    /// secret files, TLS). An instance that differs here was re-pointed by a reload: it needs a
    /// new provider object and a new circuit breaker (the old one judged another endpoint).
    public func pointsLikeThis(_ other: ProviderSettings) -> Bool {
        kind == other.kind && options == other.options
    }
}
