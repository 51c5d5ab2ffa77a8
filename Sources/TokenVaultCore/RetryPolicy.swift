/// Exponential backoff with full jitter (the AWS architecture blog's "full jitter"), capped,
/// honouring a provider's `Retry-After`. Pure: the random number comes in as an argument.
public struct RetryPolicy: Sendable, Equatable {
    /// The first retry waits up to this long.
    public var base: Double
    /// No wait is longer than this, whatever the attempt count.
    public var cap: Double
    /// A `Retry-After` longer than this is clamped (a provider asking for a day is not obeyed
    /// blindly; the credential stays visible as failing).
    public var maximumRetryAfter: Double

    public init(base: Double = 1, cap: Double = 300, maximumRetryAfter: Double = 3600) {
        self.base = base
        self.cap = cap
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// Seconds to wait before retry number `attempt` (1 for the first retry). `random` is in
    /// 0..<1. With `retryAfter` the provider's wait is honoured, plus up to 10% jitter so that
    /// credentials told the same thing do not come back together.
    public func delay(attempt: Int, retryAfter: Double? = nil, random: Double) -> Double {
        let unit = min(max(random, 0), 1)
        if let retryAfter, retryAfter > 0 {
            let wait = min(retryAfter, maximumRetryAfter)
            return wait + wait * 0.1 * unit
        }
        let exponent = Double(min(max(attempt - 1, 0), 40))
        let ceiling = min(cap, base * pow2(exponent))
        return ceiling * unit
    }

    private func pow2(_ exponent: Double) -> Double {
        var value = 1.0
        for _ in 0..<Int(exponent) { value *= 2 }
        return value
    }
}
