import Synchronization
import Testing
import TokenVaultTesting

@testable import TokenVaultEngine

/// Changes made by other nodes wake the scheduler in batches: a burst of pokes is one signal,
/// and a poke after the signal went out gets one of its own.
@Suite struct CoalescedWakeTests {
    @Test func aBurstOfPokesIsOneSignalAndALaterPokeAnother() async throws {
        let received = Atomic<Int>(0)
        let wake = CoalescedWake(interval: .milliseconds(300)) { received.add(1, ordering: .relaxed) }
        for _ in 0..<1000 { wake.poke() }
        // Generous bounds: the parallel phase has stalled this process for over 5 s at its start.
        #expect(try await waitUntil(within: 30) { received.load(ordering: .relaxed) >= 1 })
        // However slow the machine, 1,000 pokes in a row are a few signals, not hundreds.
        #expect(received.load(ordering: .relaxed) <= 3)
        let afterBurst = received.load(ordering: .relaxed)
        wake.poke()
        #expect(try await waitUntil(within: 30) { received.load(ordering: .relaxed) > afterBurst })
        #expect(wake.signals == received.load(ordering: .relaxed))
    }
}
