import Testing
import TokenVaultCore

@testable import TokenVaultEngine

/// Refreshes a storage error ended wait their pause, go oldest first within the free slots, and
/// the scheduler learns when the next pause ends.
@Suite struct StrandedRefreshesTests {
    @Test func theyWaitTheirPauseAndGoOldestFirstWithinTheSlots() throws {
        let stranded = StrandedRefreshes(pause: .seconds(1))
        let (a, b, c) = (try CredentialID("t/a"), try CredentialID("t/b"), try CredentialID("t/c"))
        stranded.add(a)
        let start = ContinuousClock.now
        let none = stranded.take(limit: 10, now: start)
        #expect(none.ids.isEmpty)
        #expect((none.nextIn ?? 0) > 0.9 && (none.nextIn ?? 0) <= 1)

        stranded.add(b)
        stranded.add(c)
        let later = start + .seconds(2)
        let first = stranded.take(limit: 2, now: later)
        #expect(first.ids == [a, b])
        // `c` is ready but over the limit: no pause to wait for (a finishing refresh wakes).
        #expect(first.nextIn == nil)
        #expect(stranded.take(limit: 0, now: later).ids.isEmpty)
        #expect(stranded.take(limit: 5, now: later).ids == [c])
        #expect(stranded.isEmpty)
    }
}
