/// Sends one delivery to its endpoint, signed (the daemon's `WebhookSender`: the same timeouts
/// and TLS policy as provider calls). Never throws: every way it can end is an attempt.
public protocol WebhookSending: Sendable {
    func send(_ delivery: WebhookDelivery) async -> WebhookAttempt
}

/// How one delivery attempt ended.
public enum WebhookAttempt: Sendable, Equatable {
    /// A 2xx: the endpoint took it.
    case delivered
    /// Anything else: `reason` is an HTTP status or a transport error's code (never a body);
    /// `retryAfter` what the endpoint asked for, if anything.
    case failed(reason: String, retryAfter: Double?)
}

/// What the webhook dispatcher did since start-up (metrics).
public struct WebhookCounters: Sendable, Equatable {
    /// Deliveries an endpoint took.
    public var delivered = 0
    /// Attempts that failed (each retry counts).
    public var failedAttempts = 0
    /// Deliveries given up after the retry period (listed by `tokenvault webhooks`).
    public var deadLettered = 0
    /// Outcomes dropped because the row's claim had passed to another attempt.
    public var claimsLost = 0

    public init() {}
}
