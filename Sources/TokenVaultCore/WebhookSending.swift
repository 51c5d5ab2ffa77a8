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
