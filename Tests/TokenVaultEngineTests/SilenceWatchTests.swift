import Testing
import TokenVaultCore
import TokenVaultEngine

/// When another node counts as silent: only after this node watched its counter stand still for a
/// whole period, in readings close enough together.
@Suite struct SilenceWatchTests {
    static func reading(at seconds: Double, _ beats: [String: Int64]) -> HeartbeatReading {
        let now = Timestamp(seconds: seconds)
        return HeartbeatReading(
            databaseNow: now,
            nodes: beats.map {
                NodeRecord(
                    node: $0.key, incarnation: "i", beat: $0.value, beatAt: now, startedAt: now, host: "h", pid: 1)
            })
    }

    /// Beats every `step` seconds from `from` to `to`, with `other` standing at `beat`.
    static func watch(_ watch: inout SilenceWatch, from: Double, to: Double, step: Double = 5, other beat: Int64) {
        var at = from
        var mine: Int64 = 1
        while at <= to {
            watch.observe(reading(at: at, ["me": mine, "other": beat]))
            mine += 1
            at += step
        }
    }

    @Test func aCounterStandingStillForAPeriodIsSilence() {
        var watch = SilenceWatch(period: 60, maximumGap: 20)
        Self.watch(&watch, from: 1000, to: 1055, other: 7)
        #expect(watch.verdict(on: "other") == .heard)
        Self.watch(&watch, from: 1060, to: 1060, other: 7)
        #expect(watch.verdict(on: "other") == .silent(beat: 7))
    }

    @Test func aCounterThatMovesIsHeardAndTheWatchStartsOver() {
        var watch = SilenceWatch(period: 60, maximumGap: 20)
        Self.watch(&watch, from: 1000, to: 1050, other: 7)
        Self.watch(&watch, from: 1055, to: 1100, other: 8)
        #expect(watch.verdict(on: "other") == .heard)
        Self.watch(&watch, from: 1105, to: 1115, other: 8)
        #expect(watch.verdict(on: "other") == .silent(beat: 8))
    }

    /// A database down for everyone (this node's beats failed too) is not silence: when it comes
    /// back, the other node gets a whole period to beat again.
    @Test func aFailedBeatOfOurOwnIsNotSilenceOfTheOthers() {
        var watch = SilenceWatch(period: 60, maximumGap: 20)
        Self.watch(&watch, from: 1000, to: 1050, other: 7)
        watch.lostContact()
        #expect(watch.verdict(on: "other") == .heard)
        Self.watch(&watch, from: 1200, to: 1255, other: 7)
        #expect(watch.verdict(on: "other") == .heard)
        Self.watch(&watch, from: 1260, to: 1260, other: 7)
        #expect(watch.verdict(on: "other") == .silent(beat: 7))
    }

    /// This node paused (or cut off) between two readings did not watch in between.
    @Test func readingsTooFarApartBreakTheWatch() {
        var watch = SilenceWatch(period: 60, maximumGap: 20)
        Self.watch(&watch, from: 1000, to: 1010, other: 7)
        Self.watch(&watch, from: 1100, to: 1150, other: 7)
        #expect(watch.verdict(on: "other") == .heard)
        // A reading earlier than the last one (the database's clock stepped back) breaks it too.
        Self.watch(&watch, from: 1155, to: 1160, other: 7)
        watch.observe(Self.reading(at: 1090, ["other": 7]))
        #expect(watch.verdict(on: "other") == .heard)
    }

    /// An owner with no row at all (forgotten, or named before nodes had identities) is watched as
    /// absent from the moment it is asked about, and its row's removal counts as a change.
    @Test func anAbsentNodeIsSilentAfterAPeriodOfAbsence() {
        var watch = SilenceWatch(period: 60, maximumGap: 20)
        Self.watch(&watch, from: 1000, to: 1000, other: 7)
        #expect(watch.verdict(on: "host:123:abc") == .heard)
        Self.watch(&watch, from: 1005, to: 1060, other: 7)
        #expect(watch.verdict(on: "host:123:abc") == .silent(beat: nil))
        var removed = SilenceWatch(period: 60, maximumGap: 20)
        Self.watch(&removed, from: 1000, to: 1100, other: 7)
        removed.observe(Self.reading(at: 1105, ["me": 99]))
        #expect(removed.verdict(on: "other") == .heard)
        removed.observe(Self.reading(at: 1110, ["me": 100]))
        for at in stride(from: 1115.0, through: 1165, by: 5) { removed.observe(Self.reading(at: at, ["me": 100])) }
        #expect(removed.verdict(on: "other") == .silent(beat: nil))
    }

    @Test func nothingIsSilentBeforeTheFirstReading() {
        var watch = SilenceWatch(period: 0, maximumGap: 20)
        #expect(watch.verdict(on: "other") == .heard)
    }
}
