import Foundation
import Logging
import Synchronization

/// Compares this host's clock with the `Date` header of a provider's answer and warns when they
/// differ by more than a minute: tokens' lifetimes are counted on this host's clock, so one that
/// is minutes off serves tokens the provider has expired, or refreshes early. A warning, not a
/// refusal: the header has a second's resolution and a server's clock can be wrong too (nodes on
/// PostgreSQL measure themselves against the database, `CorrectedClock`). At most one warning
/// per instance every ten minutes.
final class ProviderClockCheck: Sendable {
    static let tolerance: Double = 60
    static let quietPeriod: Double = 600

    private let lastWarning = Mutex<Date?>(nil)

    /// The provider's clock minus this host's, in seconds, when the header is an HTTP-date.
    static func offset(dateHeader: String?, now: Date) -> Double? {
        guard let dateHeader, let epoch = HTTPDate.parse(dateHeader, near: now) else { return nil }
        return epoch - now.timeIntervalSince1970
    }

    /// Looks at one answer (not one a courier kept through a restart: its header is old); true
    /// when it warned.
    @discardableResult
    func observe(_ answer: HTTPAnswer, provider: String, logger: Logger, now: Date = Date()) -> Bool {
        guard answer.sentAt == nil, let offset = Self.offset(dateHeader: answer.headers["date"], now: now),
            abs(offset) > Self.tolerance
        else { return false }
        let due = lastWarning.withLock { last -> Bool in
            guard last.map({ now.timeIntervalSince($0) >= Self.quietPeriod }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return false }
        logger.warning(
            "this host's clock is \(Int(abs(offset).rounded())) s \(offset > 0 ? "behind" : "ahead of") provider \(provider)'s (its Date header): token lifetimes are counted on this host's clock; set it right (NTP)",
            metadata: ["tokenvault.provider": "\(provider)", "tokenvault.clock.provider_offset_seconds": "\(offset)"])
        return true
    }
}
