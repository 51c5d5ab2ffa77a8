/// Wall-clock time for every decision that depends on "now" (expiry, refresh planning), so
/// tests can move time by hand.
public protocol VaultClock: Sendable {
    var now: Timestamp { get }
    /// How far off the database's clock this one is, when too far to decide by
    /// (`CorrectedClock`): then nothing is served or refreshed. Nil: decisions may go on.
    var untrustedOffset: Double? { get }
}

extension VaultClock {
    public var untrustedOffset: Double? { nil }
}

/// The real clock.
public struct SystemClock: VaultClock {
    public init() {}
    public var now: Timestamp { Timestamp.now() }
}
