#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A point in time as Unix epoch milliseconds: the unit of every time column in the database.
///
/// Times computed from numbers that came from outside (a lifetime in a request body, a
/// provider's answer, a `Retry-After`) never trap: `init(seconds:)` and `adding(seconds:)` clamp
/// to the years 1 to 9999 (and read NaN as the epoch). Callers still refuse absurd inputs with a
/// clear error; this only makes a missed check a wrong time instead of a crashed daemon.
public struct Timestamp: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var milliseconds: Int64

    /// 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z.
    public static let earliest = Timestamp(milliseconds: -62_135_596_800_000)
    public static let latest = Timestamp(milliseconds: 253_402_300_799_999)

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }
    public init(seconds: Double) { self.milliseconds = Self.clampedMilliseconds(seconds * 1000) }

    public static func now() -> Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(milliseconds: Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000)
    }

    public var seconds: Double { Double(milliseconds) / 1000 }

    public func adding(seconds: Double) -> Timestamp {
        Timestamp(milliseconds: Self.clampedMilliseconds(Double(milliseconds) + seconds * 1000))
    }

    private static func clampedMilliseconds(_ value: Double) -> Int64 {
        guard !value.isNaN else { return 0 }
        let bounded = min(max(value.rounded(.down), Double(earliest.milliseconds)), Double(latest.milliseconds))
        return Int64(bounded)
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.milliseconds < rhs.milliseconds }

    /// RFC 3339 in UTC with milliseconds, e.g. `2026-11-22T04:07:05.123Z`. Written digit by
    /// digit into the string's own storage (`writeRFC3339`): every listed credential carries
    /// several of these, and string interpolation of padded numbers was a fifth of a page's CPU.
    public var description: String {
        var fallback = false
        let text = String(unsafeUninitializedCapacity: Self.rfc3339Length) { output in
            guard let written = writeRFC3339(to: UnsafeMutableRawBufferPointer(output)) else {
                fallback = true
                return 0
            }
            return written
        }
        guard fallback else { return text }
        var time = time_t(milliseconds.floorDivided(by: 1000))
        var parts = tm()
        gmtime_r(&time, &parts)
        let millis = Int32(milliseconds - milliseconds.floorDivided(by: 1000) * 1000)
        return "\(Int(parts.tm_year) + 1900)-\(Self.digits(parts.tm_mon + 1, 2))-\(Self.digits(parts.tm_mday, 2))T"
            + "\(Self.digits(parts.tm_hour, 2)):\(Self.digits(parts.tm_min, 2)):\(Self.digits(parts.tm_sec, 2))"
            + ".\(Self.digits(millis, 3))Z"
    }

    /// The length of `description` for the years 0 to 9999.
    public static let rfc3339Length = 24

    /// Writes `description` into `output` (at least `rfc3339Length` bytes) and returns its length;
    /// nil, writing nothing, outside the years 0 to 9999. The calendar is computed, not asked of
    /// `gmtime_r`, whose time-zone lock every event loop and thread shared.
    public func writeRFC3339(to output: UnsafeMutableRawBufferPointer) -> Int? {
        let seconds = milliseconds.floorDivided(by: 1000)
        let millis = Int(milliseconds - seconds * 1000)
        let days = seconds.floorDivided(by: 86_400)
        let secondOfDay = Int(seconds - days * 86_400)
        // Days to a proleptic Gregorian date (H. Hinnant's `civil_from_days`).
        let shifted = days + 719_468
        let era = shifted.floorDivided(by: 146_097)
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * monthIndex + 2) / 5 + 1)
        let month = Int(monthIndex < 10 ? monthIndex + 3 : monthIndex - 9)
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        guard (0...9999).contains(year), output.count >= Self.rfc3339Length else { return nil }
        var end = 0
        func put(_ value: Int, _ width: Int, then separator: UInt8) {
            var value = value
            for index in stride(from: end + width - 1, through: end, by: -1) {
                output[index] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            }
            output[end + width] = separator
            end += width + 1
        }
        put(Int(year), 4, then: UInt8(ascii: "-"))
        put(month, 2, then: UInt8(ascii: "-"))
        put(day, 2, then: UInt8(ascii: "T"))
        put(secondOfDay / 3600, 2, then: UInt8(ascii: ":"))
        put(secondOfDay / 60 % 60, 2, then: UInt8(ascii: ":"))
        put(secondOfDay % 60, 2, then: UInt8(ascii: "."))
        put(millis, 3, then: UInt8(ascii: "Z"))
        return end
    }

    private static func digits(_ value: Int32, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }

    public init(from decoder: any Decoder) throws {
        milliseconds = try decoder.singleValueContainer().decode(Int64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(milliseconds)
    }
}

extension Int64 {
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
