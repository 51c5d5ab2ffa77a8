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
    /// Where the proxy may send this instance's credentials' tokens (`api_base_urls`); none:
    /// nowhere (the proxy refuses every call through them).
    public var apiBases: [APIBase] = []
    /// Request headers the proxy forwards for this instance beyond `ForwardedHeaders.standard`
    /// (`proxy_headers`, lower-cased): the ones its API needs, such as a version header.
    public var proxyHeaders: Set<String> = []
    /// Sender-constrained tokens (`dpop: true`, RFC 9449): token requests and proxied calls carry
    /// proofs made with the instance's key (`DPoPSession`), so the provider binds its tokens to it.
    public var dpop = false

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

/// How a reload changed one provider instance, from least to most. The one rule for what each
/// change needs: the provider set (`ProviderSet.rebuilt`) builds a new object from `rebuilt` up,
/// the refresh engine gives a new gate (a fresh circuit breaker) only to `repointed`.
public enum ProviderChange: Int, Sendable, Comparable {
    case unchanged
    /// Planner, `expired_unit` or limits other than concurrency: the engine and the vault's.
    case retuned
    /// Same endpoints, another concurrency or `dpop`: a new object (its transport's connection pool
    /// follows it), the same gate, retuned (the breaker judged these very endpoints).
    case rebuilt
    /// Another kind or options (endpoints, client, secret files, TLS): a new object and a new
    /// gate (the old breaker judged another endpoint).
    case repointed

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension ProviderSettings {
    /// How `new` differs from these settings (the same instance, before and after a reload).
    public func change(to new: ProviderSettings) -> ProviderChange {
        if kind != new.kind || options != new.options { return .repointed }
        if limits.concurrency != new.limits.concurrency || dpop != new.dpop { return .rebuilt }
        return self == new ? .unchanged : .retuned
    }
}
