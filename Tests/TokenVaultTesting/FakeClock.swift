import Synchronization
import TokenVaultCore

/// A clock tests move by hand.
public final class FakeClock: VaultClock {
    private let current: Mutex<Timestamp>

    public init(_ start: Timestamp = Timestamp(milliseconds: 1_795_000_000_000)) { current = Mutex(start) }

    public var now: Timestamp { current.withLock { $0 } }

    public func advance(seconds: Double) { current.withLock { $0 = $0.adding(seconds: seconds) } }
    public func set(_ timestamp: Timestamp) { current.withLock { $0 = timestamp } }
}
