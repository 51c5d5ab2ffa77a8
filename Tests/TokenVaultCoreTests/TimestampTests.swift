import Foundation
import Testing
import TokenVaultCore

/// `Timestamp.description`, written digit by digit, against Foundation's RFC 3339 formatter.
@Suite struct TimestampTests {
    static func reference(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        // Whole seconds and milliseconds apart: a Double of milliseconds rounds the fraction.
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let millis = milliseconds - seconds * 1000
        let text = formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
        return text.replacingOccurrences(of: ".000Z", with: String(format: ".%03dZ", Int(millis)))
    }

    /// The same text from the C library's calendar (proleptic Gregorian in every year).
    static func gmtime(_ milliseconds: Int64) -> String {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec),
            Int(milliseconds - seconds * 1000))
    }

    @Test func writesRFC3339InUTCWithMilliseconds() {
        #expect(Timestamp(milliseconds: 1_795_233_625_123).description == "2026-11-21T04:00:25.123Z")
        #expect(Timestamp(milliseconds: 0).description == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp(milliseconds: -1).description == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp(milliseconds: 253_402_300_799_999).description == "9999-12-31T23:59:59.999Z")
        #expect(Timestamp(milliseconds: 253_402_300_800_000).description == "10000-01-01T00:00:00.000Z")
        #expect(Timestamp(milliseconds: -62_167_219_200_000).description == "0000-01-01T00:00:00.000Z")
        #expect(Timestamp(milliseconds: -62_167_219_200_001).description == "-1-12-31T23:59:59.999Z")
        #expect(Timestamp(milliseconds: 951_782_400_000).description == "2000-02-29T00:00:00.000Z")
    }

    @Test func agreesWithFoundationAcrossTheCenturies() {
        var generator = SystemRandomNumberGenerator()
        // 1900-2100, then the whole range written digit by digit (years 0 to 9999), leap days and
        // century boundaries included: the calendar is computed, not asked of gmtime.
        let ranges: [ClosedRange<Int64>] = [
            -2_208_988_800_000...4_102_444_800_000, -62_167_219_200_000...253_402_300_799_999,
            951_782_400_000...951_868_799_999, -2_203_977_600_000...(-2_203_891_200_001),
        ]
        for index in 0..<4000 {
            let milliseconds = Int64.random(in: ranges[index % ranges.count], using: &generator)
            // Foundation's formatter turns Julian before 1582; glibc's gmtime stays Gregorian.
            let reference = index % ranges.count == 1 ? Self.gmtime(milliseconds) : Self.reference(milliseconds)
            #expect(Timestamp(milliseconds: milliseconds).description == reference, "\(milliseconds)")
        }
    }
}
