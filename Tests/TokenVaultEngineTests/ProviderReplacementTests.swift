import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultEngine

/// A reload's provider instances, put in force in the engine (`install`): added, removed,
/// re-pointed, retuned; calls in flight finish on the object they started with.
@Suite struct ProviderReplacementTests {
    /// A forced refresh of `id`, held inside the provider (the call is in flight) until the latch
    /// opens.
    static func heldRefresh(_ id: CredentialID, _ fixture: EngineFixture) async throws
        -> (Task<RefreshOutcome, any Error>, Latch)
    {
        let latch = Latch()
        fixture.provider.script(.hold(latch), .succeed())
        let refresh = Task { try await fixture.engine.refresh(id, reason: .forced) }
        #expect(try await waitUntil(within: 10) { latch.arrived == 1 })
        return (refresh, latch)
    }

    static let settings = ProviderSettings(
        name: "scripted", kind: "oauth2", limits: ProviderLimits(breakerThreshold: 1),
        options: ["token_endpoint": .string("https://a.example/token")])

    @Test func limitsAloneKeepTheGateARepointedInstanceGetsANewOneARemovedOneFailsClassified() async throws {
        let fixture = try EngineFixture(limits: Self.settings.limits)
        let engine = fixture.engine
        _ = engine.install(
            ProviderTable(settings: ["scripted": Self.settings], providers: [fixture.provider.name: fixture.provider]))
        let (id, _) = try await fixture.store("a")
        fixture.provider.script(.fail(ProviderFailure.testUnavailable))
        _ = try await engine.refresh(id, reason: .forced)
        #expect(engine.providerStates().first?.condition == .circuitOpen, "one transient failure opens it")

        // Limits alone: same gate (the breaker stays open), new limits in force.
        var retuned = Self.settings
        retuned.limits.concurrency = 2
        let first = engine.install(
            ProviderTable(settings: ["scripted": retuned], providers: [fixture.provider.name: fixture.provider]))
        #expect(first.retuned == ["scripted"] && first.repointed.isEmpty && first.added.isEmpty)
        #expect(engine.providerStates().first?.condition == .circuitOpen)
        #expect(engine.limits(for: "scripted").concurrency == 2)
        #expect(await first.retired().isEmpty, "the provider object is still in use")

        // Re-pointed: a new provider object and a fresh gate; the next refresh goes to it.
        var repointed = retuned
        repointed.options = ["token_endpoint": .string("https://b.example/token")]
        let newer = ScriptedProvider(name: "scripted")
        let second = engine.install(ProviderTable(settings: ["scripted": repointed], providers: ["scripted": newer]))
        #expect(second.repointed == ["scripted"] && second.retuned.isEmpty)
        #expect(engine.providerStates().first?.condition == .ok)
        let before = fixture.provider.calls
        guard case .refreshed = try await engine.refresh(id, reason: .forced) else {
            Issue.record("the re-pointed instance did not refresh")
            return
        }
        #expect(newer.calls == 1 && fixture.provider.calls == before)
        let released = await second.retired()
        #expect(released.count == 1 && released.first?.isSameObject(as: fixture.provider) == true)

        // Removed: its credentials fail as not configured, classified, and nothing crashes.
        let third = engine.install(ProviderTable(settings: [:], providers: [:]))
        #expect(third.removed == ["scripted"])
        guard case .failed(let failure, let metadata) = try await engine.refresh(id, reason: .forced) else {
            Issue.record("a credential of a removed instance did not fail")
            return
        }
        #expect(failure.code == "provider_not_configured" && failure.kind == .misconfigured)
        #expect(failure.message.contains("not in the configuration"))
        #expect(metadata?.status == .failing && metadata?.lastError?.code == "provider_not_configured")
        #expect(engine.providerStates().isEmpty)
        #expect(newer.calls == 1)

        // Added back: a new gate, and its credentials refresh again.
        let fourth = engine.install(ProviderTable(settings: ["scripted": repointed], providers: ["scripted": newer]))
        #expect(fourth.added == ["scripted"])
        guard case .refreshed = try await engine.refresh(id, reason: .forced) else {
            Issue.record("the added instance did not refresh")
            return
        }
    }

    /// A reload under refreshes in flight puts one table in force whole: every refresh commits
    /// with the planner of the table it took its provider from. The calls held inside the old
    /// provider are planned by the old planner; those still waiting for the gate go to the new
    /// provider and are planned by the new one; none is answered by one and planned by the other.
    @Test func aReloadUnderConcurrentRefreshesGivesEachTheTableItTookItsProviderFrom() async throws {
        // Far apart, no jitter: the stored refresh_at tells which planner planned.
        let old = RefreshPlanner(lifetimeShare: 0.5, margin: 0, jitterFraction: 0)
        let new = RefreshPlanner(lifetimeShare: 0.9, margin: 0, jitterFraction: 0)
        let limits = ProviderLimits(concurrency: 4, ratePerSecond: 1000, burst: 1000)
        let fixture = try EngineFixture(limits: limits, planner: old)
        let engine = fixture.engine
        var ids: [CredentialID] = []
        for index in 0..<12 { ids.append(try await fixture.store("c\(index)").0) }
        let latch = Latch()
        fixture.provider.script(.hold(latch), .hold(latch), .hold(latch), .hold(latch))
        let refreshes = ids.map { id in Task { try await engine.refresh(id, reason: .forced) } }
        #expect(try await waitUntil(within: 10) { latch.arrived == 4 }, "four calls held in the old provider")

        let newer = ScriptedProvider(name: "scripted")
        var repointed = ProviderSettings(name: "scripted", kind: "oauth2", planner: new, limits: limits)
        repointed.options = ["token_endpoint": .string("https://b.example/token")]
        let replacement = engine.install(
            ProviderTable(version: 2, settings: ["scripted": repointed], providers: ["scripted": newer]))
        #expect(replacement.repointed == ["scripted"])
        #expect(fixture.vault.providers.version == 2, "the vault's table changed with the engine's slots")
        latch.open()

        var offsets: [Double] = []
        for refresh in refreshes {
            guard case .refreshed(let metadata) = try await refresh.value, let refreshAt = metadata.refreshAt else {
                Issue.record("a refresh did not commit")
                continue
            }
            offsets.append(refreshAt.seconds - metadata.issuedAt.seconds)
        }
        #expect(fixture.provider.calls == 4 && newer.calls == 8)
        #expect(
            offsets.filter { abs($0 - 1800) < 1 }.count == 4,
            "the old provider's answers, planned by the old planner: \(offsets)")
        #expect(
            offsets.filter { abs($0 - 3240) < 1 }.count == 8,
            "the new provider's answers, planned by the new planner: \(offsets)")
    }

    @Test func aCallInFlightFinishesOnTheOldProviderWhichIsReleasedAfterIt() async throws {
        let fixture = try EngineFixture()
        let engine = fixture.engine
        let (id, _) = try await fixture.store("a")
        let (refresh, latch) = try await Self.heldRefresh(id, fixture)

        let newer = ScriptedProvider(name: "scripted")
        var moved = ProviderSettings(name: "scripted", kind: "oauth2")
        moved.options = ["token_endpoint": .string("https://b.example/token")]
        let replacement = engine.install(ProviderTable(settings: ["scripted": moved], providers: ["scripted": newer]))
        let release = ReleaseWatch(replacement)
        // Released too early, it would show within this wait; held, it never does.
        #expect(try await !waitUntil(within: 0.5) { release.isDone }, "released while a call uses it")
        latch.open()
        guard case .refreshed = try await refresh.value else {
            Issue.record("the call in flight did not finish on the old provider")
            return
        }
        let old = await release.value
        #expect(old.count == 1 && old.first?.isSameObject(as: fixture.provider) == true)
        #expect(newer.calls == 0, "the call in flight stayed on the old provider")
    }

    /// A reload that changes only the planner makes a new slot around the same object while a call
    /// runs on the old slot; a second reload that removes the instance must still wait for that
    /// call before the object is released (shut down).
    @Test func anObjectKeptByAPlannerOnlyReloadIsReleasedOnlyAfterItsCallsOnTheOlderSlot() async throws {
        let fixture = try EngineFixture()
        let engine = fixture.engine
        let (id, _) = try await fixture.store("a")
        let (refresh, latch) = try await Self.heldRefresh(id, fixture)

        var planned = ProviderSettings(name: "scripted", kind: "oauth2")
        planned.planner.lifetimeShare = 0.5
        let first = engine.install(
            ProviderTable(settings: ["scripted": planned], providers: ["scripted": fixture.provider]))
        #expect(first.added.isEmpty && first.removed.isEmpty && first.repointed.isEmpty)
        let firstRelease = ReleaseWatch(first)

        let second = engine.install(ProviderTable(settings: [:], providers: [:]))
        #expect(second.removed == ["scripted"])
        let release = ReleaseWatch(second)
        #expect(try await !waitUntil(within: 0.5) { release.isDone }, "released while a call uses it")
        latch.open()
        guard case .refreshed = try await refresh.value else {
            Issue.record("the call in flight did not finish")
            return
        }
        let old = await release.value
        #expect(old.count == 1 && old.first?.isSameObject(as: fixture.provider) == true)
        #expect(await firstRelease.value.isEmpty, "the first reload kept the object in force")
    }

    /// A call queued in the gate of an instance that a reload re-points goes to the new object
    /// once it is let through, not to the replaced one.
    @Test func aCallQueuedInTheGateOfARepointedInstanceGoesToTheNewProvider() async throws {
        let fixture = try EngineFixture(limits: ProviderLimits(concurrency: 1))
        let engine = fixture.engine
        let (first, _) = try await fixture.store("a")
        let (second, _) = try await fixture.store("b")
        let (running, latch) = try await Self.heldRefresh(first, fixture)
        let queued = Task { try await engine.refresh(second, reason: .forced) }
        let gate = try #require(engine.slots.withLock { $0["scripted"] }?.gate)
        #expect(try await waitUntil(within: 10) { gate.queued == 1 })

        let newer = ScriptedProvider(name: "scripted")
        var moved = ProviderSettings(name: "scripted", kind: "oauth2", limits: ProviderLimits(concurrency: 1))
        moved.options = ["token_endpoint": .string("https://b.example/token")]
        let replacement = engine.install(ProviderTable(settings: ["scripted": moved], providers: ["scripted": newer]))
        latch.open()
        guard case .refreshed = try await running.value, case .refreshed = try await queued.value else {
            Issue.record("a refresh did not succeed")
            return
        }
        #expect(fixture.provider.calls == 1, "the queued call went to the replaced provider")
        #expect(newer.calls == 1)
        #expect(await replacement.retired().count == 1)
    }
}

/// Waits for a replacement's retired objects in the background and says when they came back.
private struct ReleaseWatch: Sendable {
    private let task: Task<[any TokenProvider], Never>
    private let done = Latch()

    init(_ replacement: ProviderReplacement) {
        task = Task { [done] in
            let retired = await replacement.retired()
            done.open()
            return retired
        }
    }

    var isDone: Bool { done.isOpen }
    var value: [any TokenProvider] { get async { await task.value } }
}
