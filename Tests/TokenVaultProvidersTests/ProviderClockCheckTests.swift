import Foundation
import Logging
import Testing
import TokenVaultCore

@testable import TokenVaultProviders

/// A provider's `Date` header against this host's clock: a warning past a minute, at most one
/// per instance every ten minutes, none for an answer a courier kept through a restart.
@Suite struct ProviderClockCheckTests {
    static let now = Date(timeIntervalSince1970: 1_795_000_000)  // Wed, 18 Nov 2026 11:06:40 GMT

    static func answer(date: String, kept: Bool = false) -> HTTPAnswer {
        var answer = HTTPAnswer(status: 200, headers: ["date": date], body: [])
        if kept { answer.sentAt = Timestamp(milliseconds: 1_794_999_000_000) }
        return answer
    }

    @Test func theHeaderIsReadAsTheProvidersClockMinusThisHosts() {
        #expect(ProviderClockCheck.offset(dateHeader: "Wed, 18 Nov 2026 11:06:40 GMT", now: Self.now) == 0)
        #expect(ProviderClockCheck.offset(dateHeader: "Wed, 18 Nov 2026 11:08:10 GMT", now: Self.now) == 90)
        #expect(ProviderClockCheck.offset(dateHeader: "yesterday", now: Self.now) == nil)
        #expect(ProviderClockCheck.offset(dateHeader: nil, now: Self.now) == nil)
    }

    @Test func itWarnsPastAMinuteOncePerQuietPeriod() {
        let check = ProviderClockCheck()
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        #expect(
            !check.observe(
                Self.answer(date: "Wed, 18 Nov 2026 11:07:30 GMT"), provider: "p", logger: logger, now: Self.now))
        #expect(
            !check.observe(
                Self.answer(date: "Wed, 18 Nov 2026 11:00:00 GMT", kept: true), provider: "p", logger: logger,
                now: Self.now))
        #expect(
            check.observe(
                Self.answer(date: "Wed, 18 Nov 2026 11:00:00 GMT"), provider: "p", logger: logger, now: Self.now))
        #expect(
            !check.observe(
                Self.answer(date: "Wed, 18 Nov 2026 11:00:00 GMT"), provider: "p", logger: logger,
                now: Self.now.addingTimeInterval(60)))
        let later = Self.now.addingTimeInterval(ProviderClockCheck.quietPeriod)
        #expect(
            check.observe(Self.answer(date: "Wed, 18 Nov 2026 11:00:00 GMT"), provider: "p", logger: logger, now: later)
        )
    }
}
