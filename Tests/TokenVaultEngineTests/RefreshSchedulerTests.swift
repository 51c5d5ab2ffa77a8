import Foundation
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultEngine

/// The scheduler in real time: short-lived credentials are refreshed before they expire, a
/// newly stored sooner credential wakes it, and an attempt left open is resumed at start.
@Suite struct RefreshSchedulerTests {
    static let planner = RefreshPlanner(lifetimeShare: 0.5, margin: 1, jitterFraction: 0.1, defaultLifetime: 3600)

    /// Lifetimes of 12 s, refreshed at about half: 6 s of slack for a machine loaded by the rest
    /// of the suite (a fresh clone's CI once saw one refresh 2 s late with 4 s lifetimes, and the
    /// parallel phase has stalled the process for 4-5 s with 8 s lifetimes, once in three runs).
    @Test func shortLivedCredentialsAreRefreshedBeforeTheyExpire() async throws {
        let fixture = try EngineFixture(
            realTime: true, limits: ProviderLimits(concurrency: 8, ratePerSecond: 1000, burst: 100),
            planner: Self.planner, provider: ScriptedProvider(defaultLifetime: 12))
        var ids: [CredentialID] = []
        for index in 0..<20 { await ids.append(try fixture.store("short-\(index)", lifetime: 12).0) }
        let scheduler = Task { try await RefreshScheduler(engine: fixture.engine).run() }
        defer { scheduler.cancel() }
        let end = ContinuousClock.now + .seconds(13)
        var expiredSeen = 0
        while ContinuousClock.now < end {
            let now = Timestamp.now()
            for id in ids where try await fixture.metadata(id).expiresAt! <= now { expiredSeen += 1 }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(expiredSeen == 0)
        for id in ids { await #expect(try fixture.metadata(id).generation >= 2, "\(id) was never refreshed") }
        #expect(fixture.provider.presentedTwice.isEmpty)
    }

    @Test func aSoonerCredentialWakesTheSleepingScheduler() async throws {
        let fixture = try EngineFixture(
            realTime: true, planner: Self.planner, provider: ScriptedProvider(defaultLifetime: 3600))
        try await fixture.store("far", lifetime: 3600)
        let scheduler = Task { try await RefreshScheduler(engine: fixture.engine).run() }
        defer { scheduler.cancel() }
        // Asleep until the far one is due.
        #expect(try await waitUntil(within: 5) { fixture.engine.wake.isWaited })
        let (soon, _) = try await fixture.store("soon", lifetime: 2)
        // Due after about 1 s (half-life); without the wake-up it would wait for the far one, half
        // an hour away. Up to 15 s for a machine busy with the other suites.
        #expect(try await waitUntil(within: 15) { try await fixture.metadata(soon).generation >= 2 })
    }

    @Test func anAttemptLeftOpenIsResumedAtStart() async throws {
        let fixture = try EngineFixture(realTime: true, planner: Self.planner)
        let (id, metadata) = try await fixture.store("interrupted", lifetime: 3600, refreshToken: "rt-interrupted")
        try await fixture.journalOpenAttempt(
            id, generation: metadata.generation, refreshToken: "rt-interrupted",
            owner: LeaseName.owner(node: RefreshEngine.Options().node, incarnation: "gone"))
        let scheduler = Task { try await RefreshScheduler(engine: fixture.engine).run() }
        defer { scheduler.cancel() }
        #expect(try await waitUntil { try await fixture.metadata(id).generation == 2 })
        #expect(fixture.engine.counters.recovered == 1)
        await #expect(try fixture.testVault.database.openAttempts(limit: 10).isEmpty)
    }

    /// The database committed an attempt's journal write, but the connection was lost before the
    /// node heard so (a PostgreSQL restart did this in a CI run): journalling moved `refresh_at` to
    /// the lease's end, so the scheduler came back a lease period later, after the token expired.
    /// The scheduler now resumes the attempt, with the same refresh token, a second after the
    /// failure.
    @Test func aJournalWriteWhoseAcknowledgementWasLostIsRetriedBeforeTheLeaseEnds() async throws {
        let testVault = try TestVault()
        let failing = FailingStore(testVault.database)
        let fixture = try EngineFixture(
            realTime: true, planner: Self.planner, options: RefreshEngine.Options(leasePeriod: 60),
            testVault: testVault, store: { _ in failing })
        let (id, _) = try await fixture.store("lost-ack", lifetime: 3)
        failing.loseNextJournalAcks(1)
        let scheduler = Task { try await RefreshScheduler(engine: fixture.engine).run() }
        defer { scheduler.cancel() }
        // Refreshed at about 1.5 s, resumed a second after the failure; the lease ends at 61 s.
        #expect(try await waitUntil(within: 30) { try await fixture.metadata(id).generation == 2 })
        #expect(fixture.logs.text.contains("injected loss of the connection after COMMIT"))
        #expect(fixture.engine.counters.recovered == 1)
        #expect(fixture.provider.presentedTwice.isEmpty)
        await #expect(try fixture.testVault.database.openAttempts(limit: 10).isEmpty)
    }

    /// A refresh a storage error ended before anything was journalled is not started again by
    /// the restart (which would skip the failing credential's backoff): only an attempt of this
    /// process left open is resumed; the due list has the rest, as before.
    @Test func aStrandedRefreshWithNothingJournalledIsLeftToTheDueList() async throws {
        let fixture = try EngineFixture(
            realTime: true, planner: Self.planner, options: RefreshEngine.Options(leasePeriod: 60))
        let (id, metadata) = try await fixture.store("backing-off", lifetime: 3600)
        var update = ScheduleUpdate(metadata)
        update.status = .failing
        update.refreshAt = Timestamp.now().adding(seconds: 600)
        try await fixture.vault.updateSchedule(update)
        fixture.engine.stranded.add(id, now: .now - .seconds(5))
        let scheduler = Task { try await RefreshScheduler(engine: fixture.engine).run() }
        defer { scheduler.cancel() }
        try await Self.expectForgottenWithoutARefresh(fixture, id, generation: 1)
    }

    /// A credential replaced (`PUT`) after a storage error interrupted its refresh: the attempt
    /// of the old generation is still open and this process's, but the resumption starts nothing
    /// anew (it would refresh the tokens just stored); the due list has the credential.
    @Test func aResumptionOfAReplacedCredentialStartsNothing() async throws {
        let fixture = try EngineFixture(
            realTime: true, planner: Self.planner, options: RefreshEngine.Options(leasePeriod: 60))
        let (id, metadata) = try await fixture.store("replaced", lifetime: 3600, refreshToken: "rt-old")
        let scheduler = Task { try await RefreshScheduler(engine: fixture.engine).run() }
        defer { scheduler.cancel() }
        #expect(try await waitUntil(within: 5) { fixture.engine.wake.isWaited })
        try await fixture.journalOpenAttempt(
            id, generation: metadata.generation, refreshToken: "rt-old", owner: fixture.engine.leases.owner.id)
        try await fixture.store("replaced", lifetime: 3600, refreshToken: "rt-new")
        fixture.engine.stranded.add(id, now: .now - .seconds(5))
        fixture.engine.wakeScheduler()
        try await Self.expectForgottenWithoutARefresh(fixture, id, generation: 2)
    }

    /// A resumption that finds its provider paused writes nothing (the row may be a newer
    /// generation, whose `refresh_at` must not come sooner) and waits again until it reopens.
    @Test func aResumptionWhileItsProviderIsPausedWritesNothingAndWaits() async throws {
        let fixture = try EngineFixture(
            realTime: true, limits: ProviderLimits(breakerThreshold: 1, breakerCooldown: 30), planner: Self.planner,
            options: RefreshEngine.Options(leasePeriod: 60))
        let (id, metadata) = try await fixture.store("paused", lifetime: 3600, refreshToken: "rt-old")
        let scheduler = Task { try await RefreshScheduler(engine: fixture.engine).run() }
        defer { scheduler.cancel() }
        #expect(try await waitUntil(within: 5) { fixture.engine.wake.isWaited })
        try await fixture.journalOpenAttempt(
            id, generation: metadata.generation, refreshToken: "rt-old", owner: fixture.engine.leases.owner.id)
        let (_, replaced) = try await fixture.store("paused", lifetime: 3600, refreshToken: "rt-new")
        let gate = try #require(fixture.engine.slots.withLock { $0[fixture.provider.name] }?.gate)
        let failure = ProviderFailure(kind: .transient, code: .timeout, message: "no answer")
        #expect(gate.record(failure, credential: id, now: fixture.vault.clock.now) != nil, "paused")
        let skippedBefore = fixture.engine.counters.skipped
        fixture.engine.stranded.add(id, now: .now - .seconds(5))
        fixture.engine.wakeScheduler()
        #expect(
            try await waitUntil(within: 5) {
                fixture.engine.counters.skipped > skippedBefore && fixture.engine.inFlightCount == 0
            })
        await #expect(try fixture.metadata(id).refreshAt == replaced.refreshAt, "nothing written")
        #expect(!fixture.engine.stranded.isEmpty, "waiting for the provider to reopen")
        #expect(fixture.provider.calls == 0)
    }

    /// The scheduler forgets `id`'s stranded entry, and a moment later nothing has reached the
    /// provider and the credential is still at `generation`: the restart started nothing.
    static func expectForgottenWithoutARefresh(
        _ fixture: EngineFixture, _ id: CredentialID, generation: Int64,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        #expect(try await waitUntil(within: 5) { fixture.engine.stranded.isEmpty }, sourceLocation: sourceLocation)
        try await Task.sleep(for: .milliseconds(300))
        #expect(fixture.provider.calls == 0, sourceLocation: sourceLocation)
        await #expect(try fixture.metadata(id).generation == generation, sourceLocation: sourceLocation)
    }

    /// While the scheduler holds a stranded credential (taken, its journal being read), another
    /// run of the same credential (a token read's, a forced refresh) does not drop the entry:
    /// only the resumption does.
    @Test func onlyTheResumptionSettlesAStrandedCredential() async throws {
        let fixture = try EngineFixture(realTime: true, planner: Self.planner)
        let (id, _) = try await fixture.store("held", lifetime: 3600)
        fixture.engine.stranded.add(id, now: .now - .seconds(5))
        #expect(fixture.engine.stranded.take(limit: 1).ids == [id])
        _ = try await fixture.engine.refresh(id, reason: .forced)
        await #expect(try fixture.metadata(id).generation == 2)
        #expect(!fixture.engine.stranded.isEmpty, "the scheduler's entry is still there")
        _ = try await fixture.engine.refresh(id, reason: .resumption)
        #expect(fixture.engine.stranded.isEmpty)
    }
}
