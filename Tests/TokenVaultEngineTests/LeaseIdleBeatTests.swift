import Foundation
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultEngine

/// A daemon on a vault no other process journals in (SQLite) beats at the idle interval while it
/// holds nothing, at the normal one while a refresh runs, and a refresh that starts during the
/// idle wait ends it (`LeaseKeeper.idleInterval`): an idle daemon does not wake every few seconds
/// for a statement nobody reads.
@Suite struct LeaseIdleBeatTests {
    static func fixture(idle: Double?, leasePeriod: Double = 60) throws -> EngineFixture {
        var options = RefreshEngine.Options(leasePeriod: leasePeriod)
        options.heartbeatInterval = 0.05
        options.idleHeartbeatInterval = idle
        return try EngineFixture(provider: ScriptedProvider(name: "idle"), options: options)
    }

    static func beats(_ fixture: EngineFixture) async throws -> Int64 {
        try await fixture.testVault.database.nodes().first?.beat ?? 0
    }

    @Test func anIdleNodeBeatsAtTheIdleIntervalAndAtTheNormalOneWhileARefreshRuns() async throws {
        let fixture = try Self.fixture(idle: 30)
        let (id, _) = try await fixture.store("busy", refreshToken: "r1")
        let loop = Task { await fixture.engine.keepLeasesAlive() }
        defer { loop.cancel() }
        #expect(try await waitUntil { try await Self.beats(fixture) == 1 })
        try await Task.sleep(for: .milliseconds(500))
        await #expect(try Self.beats(fixture) == 1, "an idle node beat again within its idle interval")

        // A refresh whose provider call hangs: the idle wait ends, and the node beats every
        // 0.05 s while the call is in flight.
        let latch = Latch()
        fixture.provider.script(.hold(latch))
        let refresh = Task { try await fixture.engine.refresh(id, reason: .forced) }
        #expect(try await waitUntil { latch.arrived == 1 })
        let during = try await Self.beats(fixture)
        // Within 15 s, not the 30 s of the idle wait (a loaded machine slows the 0.05 s beats:
        // `make test` runs the suites side by side on two cores).
        #expect(
            try await waitUntil(within: 15) { try await Self.beats(fixture) >= during + 3 },
            "no beats while a refresh was in flight")
        latch.open()
        _ = try await refresh.value
    }

    /// The idle wait is longer than `fenceAfter`, but no lease was held across it: the refresh
    /// that ends it is not journalled again as after a lapse.
    @Test func theGapOfAnIdleWaitIsNoLapse() async throws {
        let fixture = try Self.fixture(idle: 30, leasePeriod: 3)
        let (id, _) = try await fixture.store("after-idle", refreshToken: "r1")
        let loop = Task { await fixture.engine.keepLeasesAlive() }
        defer { loop.cancel() }
        #expect(try await waitUntil { try await Self.beats(fixture) == 1 })
        try await Task.sleep(for: .milliseconds(1_200))  // longer than fenceAfter, 1 s
        _ = try await fixture.engine.refresh(id, reason: .forced)
        #expect(fixture.provider.calls == 1)
        #expect(fixture.engine.leases.lapses == 0, "an idle wait counted as a lapse")
    }

    @Test func withoutAnIdleIntervalTheNodeBeatsAtTheNormalOneAlways() async throws {
        let fixture = try Self.fixture(idle: nil)
        let loop = Task { await fixture.engine.keepLeasesAlive() }
        defer { loop.cancel() }
        // Four beats of 0.05 s; 15 s for a machine busy with the other suites (a node with an idle
        // interval beats once in 300 s).
        #expect(try await waitUntil(within: 15) { try await Self.beats(fixture) >= 4 })
    }
}
