/// Wall-clock time for every decision that depends on "now" (expiry, refresh planning), so
/// tests can move time by hand.
public protocol VaultClock: Sendable {
    var now: Timestamp { get }
    /// Why no decision about expiry may be taken on this clock now (`CorrectedClock`: not yet
    /// measured against the database's, or too far off it): then no token is served and no
    /// refresh starts. Nil: decisions may go on.
    var refusal: VaultError? { get }
    /// A time this host's clock gave (a courier's stamp), as this clock would have given it.
    func corrected(_ hostTime: Timestamp) -> Timestamp
}

extension VaultClock {
    public var refusal: VaultError? { nil }
    public func corrected(_ hostTime: Timestamp) -> Timestamp { hostTime }
}

/// The real clock.
public struct SystemClock: VaultClock {
    public init() {}
    public var now: Timestamp { Timestamp.now() }
}
