/// How long a delivery that keeps failing is retried: waits double from `baseSeconds` up to
/// `capSeconds`, and once their sum would pass `periodSeconds` the delivery is dead-lettered.
/// Counted in attempts, not from the event's time, so a redelivered row gets the whole period
/// again.
public struct WebhookRetry: Sendable, Equatable {
    public var baseSeconds: Double
    public var capSeconds: Double
    public var periodSeconds: Double

    public init(baseSeconds: Double = 5, capSeconds: Double = 3600, periodSeconds: Double = 3 * 86_400) {
        self.baseSeconds = baseSeconds
        self.capSeconds = max(baseSeconds, capSeconds)
        self.periodSeconds = periodSeconds
    }

    /// The wait before the next attempt after `failures` failed ones (1 or more), at least what
    /// the endpoint's `Retry-After` asked for (within the cap); nil when the period is spent.
    public func delay(afterFailures failures: Int, retryAfter: Double? = nil) -> Double? {
        var spent = 0.0
        for attempt in 1..<max(1, failures) { spent += wait(attempt) }
        let next = max(wait(failures), min(retryAfter ?? 0, capSeconds))
        return spent + next > periodSeconds ? nil : next
    }

    private func wait(_ failures: Int) -> Double {
        min(capSeconds, baseSeconds * Double(1 << min(max(failures, 1) - 1, 40)))
    }
}
