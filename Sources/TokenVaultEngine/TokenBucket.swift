/// A token bucket: `rate` tokens per second, at most `capacity` banked. Pure (time is an
/// argument), so pacing is unit-tested without sleeping. After an outage the bucket holds at
/// most `capacity` tokens, which bounds the burst of refreshes when the provider comes back.
struct TokenBucket: Sendable, Equatable {
    private(set) var rate: Double
    private(set) var capacity: Double
    private(set) var tokens: Double
    private(set) var updatedAt: Double

    init(rate: Double, capacity: Int, now: Double) {
        self.rate = max(rate, 0.001)
        self.capacity = Double(max(capacity, 1))
        tokens = self.capacity
        updatedAt = now
    }

    /// A new rate and capacity from a reload; what is banked carries over, up to the new capacity.
    mutating func retune(rate: Double, capacity: Int, now: Double) {
        refill(now: now)
        self.rate = max(rate, 0.001)
        self.capacity = Double(max(capacity, 1))
        tokens = min(tokens, self.capacity)
    }

    /// Takes one token if there is one and returns 0; otherwise takes nothing and returns the
    /// seconds until one will be there.
    mutating func take(now: Double) -> Double {
        refill(now: now)
        if tokens >= 1 {
            tokens -= 1
            return 0
        }
        return (1 - tokens) / rate
    }

    private mutating func refill(now: Double) {
        guard now > updatedAt else { return }
        tokens = min(capacity, tokens + (now - updatedAt) * rate)
        updatedAt = now
    }
}
