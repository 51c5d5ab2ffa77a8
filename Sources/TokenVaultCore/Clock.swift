/// Wall-clock time for every decision that depends on "now" (expiry, refresh planning), so
/// tests can move time by hand.
public protocol VaultClock: Sendable {
    var now: Timestamp { get }
}

/// The real clock.
public struct SystemClock: VaultClock {
    public init() {}
    public var now: Timestamp { Timestamp.now() }
}
