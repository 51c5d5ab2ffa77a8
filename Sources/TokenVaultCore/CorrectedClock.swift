import Synchronization

/// A node's clock set by the database's: the host's time plus the offset last measured against
/// the database's clock (each heartbeat reads it). On PostgreSQL every decision about expiry
/// (serving a token as fresh, `min_ttl`, when to refresh) then follows one clock for all nodes,
/// whatever each host's says.
///
/// The correction is only as good as the host's clock is steady between two beats, so an offset
/// larger than `maximumOffset` is refused: the node serves no token and starts no refresh until
/// its clock is set right (`refusal`); what it already holds is finished on the corrected time.
/// Until the first measurement nothing is decided either (the daemon measures before it listens).
public final class CorrectedClock: VaultClock {
    public let base: any VaultClock
    /// Seconds either way the host's clock may be off before the node refuses.
    public let maximumOffset: Double
    /// Measurements whose round trip took longer are dropped: half the round trip bounds their error.
    public let maximumRoundTrip: Double
    private let offsetMilliseconds = Atomic<Int64>(0)
    private let measured = Atomic<Bool>(false)

    public init(base: any VaultClock = SystemClock(), maximumOffset: Double, maximumRoundTrip: Double = 2) {
        self.base = base
        self.maximumOffset = maximumOffset
        self.maximumRoundTrip = maximumRoundTrip
    }

    public var now: Timestamp {
        Timestamp(milliseconds: base.now.milliseconds + offsetMilliseconds.load(ordering: .relaxed))
    }

    /// The database's time minus the host's, in seconds; nil before the first measurement.
    public var offset: Double? {
        guard measured.load(ordering: .acquiring) else { return nil }
        return Double(offsetMilliseconds.load(ordering: .relaxed)) / 1000
    }

    public var refusal: VaultError? {
        guard let offset else { return VaultError.clockUnmeasured }
        return abs(offset) > maximumOffset ? VaultError.clockSkew(offset) : nil
    }

    public func corrected(_ hostTime: Timestamp) -> Timestamp {
        Timestamp(milliseconds: hostTime.milliseconds + offsetMilliseconds.load(ordering: .relaxed))
    }

    /// Takes a reading of the database's clock, `databaseNow`, asked for at `sentAt` and answered
    /// at `receivedAt` (both by `base`): the database read its clock halfway between, as near as
    /// the round trip tells. False when the round trip was too long to trust.
    @discardableResult
    public func record(databaseNow: Timestamp, sentAt: Timestamp, receivedAt: Timestamp) -> Bool {
        let roundTrip = receivedAt.milliseconds - sentAt.milliseconds
        guard roundTrip >= 0, Double(roundTrip) <= maximumRoundTrip * 1000 else { return false }
        let midpoint = sentAt.milliseconds + roundTrip / 2
        offsetMilliseconds.store(databaseNow.milliseconds - midpoint, ordering: .relaxed)
        measured.store(true, ordering: .releasing)
        return true
    }
}
