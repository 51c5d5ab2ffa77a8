import Testing
import TokenVaultCore

@testable import TokenVaultEngine

/// Refreshes a storage error ended wait a pause that doubles with each failure in a row, go
/// longest waiting first within the free slots and not while in flight, and are forgotten once
/// a run ends without a storage error.
@Suite struct StrandedRefreshesTests {
    @Test func theyWaitAPauseThatDoublesAndGoLongestWaitingFirst() throws {
        let stranded = StrandedRefreshes(pause: .seconds(1), longestPause: .seconds(4))
        let (a, b, c) = (try CredentialID("t/a"), try CredentialID("t/b"), try CredentialID("t/c"))
        let start = ContinuousClock.now
        #expect(stranded.add(a, now: start), "the first entry wakes the scheduler")
        let none = stranded.take(limit: 10, now: start)
        #expect(none.ids.isEmpty && none.nextAt == start + .seconds(1))

        #expect(!stranded.add(b, now: start + .milliseconds(100)), "its wait ends after a's")
        stranded.add(c, now: start + .milliseconds(200))
        let later = start + .seconds(2)
        #expect(stranded.take(limit: 5, skipping: [a], now: later).ids == [b, c], "a is in flight")
        #expect(stranded.take(limit: 5, now: later).ids == [a], "b and c are running")
        #expect(stranded.take(limit: 5, now: later + .seconds(10)).ids.isEmpty)

        // b failed again: two seconds, then four (the longest), then four.
        for wait in [2, 4, 4] {
            stranded.add(b, now: later)
            let waiting = stranded.take(limit: 5, now: later)
            #expect(waiting.ids.isEmpty && waiting.nextAt == later + .seconds(wait), "\(wait)")
            #expect(stranded.take(limit: 5, now: later + .seconds(wait)).ids == [b])
        }
        // In flight (a token read's run): looked at again a second later at the latest.
        stranded.putBack(b)
        #expect(stranded.take(limit: 5, skipping: [b], now: later + .seconds(9)).nextAt == later + .seconds(10))
        stranded.putBack(b)
        #expect(stranded.take(limit: 0, now: later + .seconds(9)).ids.isEmpty)
        #expect(stranded.take(limit: 1, now: later + .seconds(9)).ids == [b])
        for id in [a, b, c] { stranded.settle(id) }
        #expect(stranded.isEmpty)

        // A run that put its credential back to wait (a paused provider) does not forget it, and
        // the pause does not lengthen the next wait.
        stranded.add(a, now: later)
        stranded.add(a, now: later, notBefore: later + .seconds(30))
        #expect(stranded.take(limit: 1, now: later + .seconds(29)).nextAt == later + .seconds(30))
        stranded.settle(a)
        #expect(!stranded.isEmpty, "a waiting entry stays")
        #expect(stranded.take(limit: 1, now: later + .seconds(60)).ids == [a])
        stranded.settle(a)
        #expect(stranded.isEmpty)
    }
}
