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

    @Test func writesRFC3339InUTCWithMilliseconds() {
        #expect(Timestamp(milliseconds: 1_795_233_625_123).description == "2026-11-21T04:00:25.123Z")
        #expect(Timestamp(milliseconds: 0).description == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp(milliseconds: -1).description == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp(milliseconds: 253_402_300_799_999).description == "9999-12-31T23:59:59.999Z")
        #expect(Timestamp(milliseconds: 253_402_300_800_000).description == "10000-01-01T00:00:00.000Z")
    }

    @Test func agreesWithFoundationAcrossTheCenturies() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let milliseconds = Int64.random(in: -2_208_988_800_000...4_102_444_800_000, using: &generator)
            #expect(
                Timestamp(milliseconds: milliseconds).description == Self.reference(milliseconds), "\(milliseconds)")
        }
    }
}
