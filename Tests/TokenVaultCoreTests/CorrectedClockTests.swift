import Testing
import TokenVaultCore
import TokenVaultTesting

/// A node's clock set by the database's: the offset each beat measures, within the bound it is
/// corrected, beyond it the node refuses.
@Suite struct CorrectedClockTests {
    @Test func theHostsTimeGoesAsItIsUntilMeasuredThenByTheDatabase() {
        let host = FakeClock()
        let clock = CorrectedClock(base: host, maximumOffset: 10)
        #expect(clock.now == host.now && clock.offset == nil && clock.refusal == .clockUnmeasured)
        // Asked at t, answered at t + 0.2 s: the database read its clock at t + 0.1 s, when it
        // said t + 4.1 s. The host is 4 s behind.
        let sentAt = host.now
        host.advance(seconds: 0.2)
        #expect(clock.record(databaseNow: sentAt.adding(seconds: 4.1), sentAt: sentAt, receivedAt: host.now))
        #expect(clock.offset == 4 && clock.refusal == nil)
        // A courier's stamp on this host's clock, as the corrected clock would have given it.
        #expect(clock.corrected(sentAt) == sentAt.adding(seconds: 4))
        #expect(clock.now == host.now.adding(seconds: 4))
    }

    @Test func anOffsetBeyondTheBoundIsRefusedEitherWayAndCanComeBack() {
        let host = FakeClock()
        let clock = CorrectedClock(base: host, maximumOffset: 10)
        clock.record(databaseNow: host.now.adding(seconds: -600), sentAt: host.now, receivedAt: host.now)
        #expect(clock.refusal == .clockSkew(-600))
        clock.record(databaseNow: host.now.adding(seconds: 10.5), sentAt: host.now, receivedAt: host.now)
        #expect(clock.refusal == .clockSkew(10.5))
        clock.record(databaseNow: host.now.adding(seconds: 9.5), sentAt: host.now, receivedAt: host.now)
        #expect(clock.refusal == nil && clock.offset == 9.5)
        #expect(VaultError.clockSkew(-600).message.hasPrefix("this node's clock is 600.0 s ahead of the database's"))
        #expect(VaultError.clockSkew(-600).code.httpStatus == 503)
    }

    @Test func aReadingWithALongRoundTripIsDropped() {
        let host = FakeClock()
        let clock = CorrectedClock(base: host, maximumOffset: 10, maximumRoundTrip: 2)
        let sentAt = host.now
        host.advance(seconds: 3)
        #expect(!clock.record(databaseNow: sentAt.adding(seconds: 100), sentAt: sentAt, receivedAt: host.now))
        #expect(clock.offset == nil && clock.now == host.now)
    }
}
