import Foundation
import Testing
import TokenVaultCore
import TokenVaultLedger
import TokenVaultTesting

@testable import TokenVaultEngine

/// Two engines on one database file, as two nodes: an attempt is taken over only after the other
/// node's heartbeat was watched standing still for a whole lease period, never because a lease's
/// recorded end passed on somebody's clock. The database's clock is the vault's fake
/// clock, so a period passes without waiting.
@Suite(.serialized) struct LeaseTakeoverTests {
    static let period = 60.0

    struct Nodes {
        let first: EngineFixture
        let second: RefreshEngine
        let id: CredentialID

        init() async throws {
            first = try EngineFixture(
                provider: ScriptedProvider(name: "shared"), options: LeaseTakeoverTests.options("node-a"))
            (id, _) = try await first.store("contended")
            let (database, keyring) = try first.testVault.reopen(masterKey: first.testVault.masterKey)
            let vault = Vault(store: database, sealer: keyring, clock: first.testVault.clock)
            second = RefreshEngine(
                vault: vault, providers: ["shared": first.provider],
                settings: ["shared": ProviderSettings(name: "shared", kind: "oauth2")],
                options: LeaseTakeoverTests.options("node-b"), logger: first.logs.logger)
        }

        /// Node A journals a refresh and its provider call hangs (a node frozen or cut off with
        /// the call in flight). Returns the latch that lets the call answer.
        func startHeldRefreshOnA() async throws -> (Latch, Task<RefreshOutcome, any Error>) {
            let latch = Latch()
            first.provider.script(.hold(latch))
            let task = Task { try await first.engine.refresh(id, reason: .forced) }
            #expect(try await waitUntil { latch.arrived == 1 })
            return (latch, task)
        }

        /// Node B's beats over `seconds` of the database's time, one every 5 s.
        func secondWatches(for seconds: Double) async {
            var elapsed = 0.0
            while elapsed < seconds {
                first.testVault.clock.advance(seconds: 5)
                elapsed += 5
                #expect(await second.leases.beat())
            }
        }
    }

    static func options(_ node: String) -> RefreshEngine.Options {
        var options = RefreshEngine.Options(leasePeriod: period)
        options.node = node
        return options
    }

    static func keptOff(_ outcome: RefreshOutcome) -> Bool {
        if case .skipped(let reason, _) = outcome { reason.contains("lease") } else { false }
    }

    @Test func anAttemptIsTakenOverOnlyAfterAPeriodOfObservedSilence() async throws {
        let nodes = try await Nodes()
        let (latch, held) = try await nodes.startHeldRefreshOnA()
        // The lease's recorded end has passed, but B has watched A's counter for 55 s only (its
        // first beat came 5 s after A's): not a reason to take it over.
        await nodes.secondWatches(for: Self.period)
        await #expect(
            try nodes.first.vault.openAttempts(limit: 1).first!.leaseExpiresAt <= nodes.first.testVault.clock.now)
        #expect(Self.keptOff(try await nodes.second.refresh(nodes.id, reason: .forced)))
        #expect(nodes.first.provider.calls == 1)
        // Watched still for a whole period: B resumes the attempt with the same refresh token,
        // which a reuse-detecting provider (A's call reached it) answers with invalid_grant.
        await nodes.secondWatches(for: 5)
        nodes.first.provider.script(.fail(.testInvalidGrant))
        guard case .failed(let failure, _) = try await nodes.second.refresh(nodes.id, reason: .forced) else {
            Issue.record("the silent node's attempt was not taken over")
            return
        }
        #expect(failure.kind == .invalidGrant)
        #expect(nodes.first.provider.presentedTwice.count == 1)
        // A's answer arrives after all: not stored, and reported, never silently dropped.
        latch.open()
        let outcome = try await held.value
        guard case .skipped(let why, _) = outcome else {
            Issue.record("A stored an answer to an attempt it no longer held: \(outcome)")
            return
        }
        #expect(why.contains("another node took the attempt over"))
        let metadata = try await nodes.first.metadata(nodes.id)
        #expect(metadata.generation == 1 && metadata.status == .needsReauth)
        #expect(metadata.lastError?.code == Vault.leaseTakenOverCode)
        #expect(nodes.first.engine.counters.answersLostToTakeover == 1)
        #expect(nodes.first.logs.text.contains("another node took the refresh over"))
    }

    /// Taken over by a node whose refresh went through (a provider with a grace window): the
    /// newer generation wins and nothing is reported lost.
    @Test func aTakeoverThatCommittedSupersedesTheLateAnswer() async throws {
        let nodes = try await Nodes()
        let (latch, held) = try await nodes.startHeldRefreshOnA()
        await nodes.secondWatches(for: Self.period + 5)
        guard case .refreshed(let refreshed) = try await nodes.second.refresh(nodes.id, reason: .forced) else {
            Issue.record("the silent node's attempt was not taken over")
            return
        }
        #expect(refreshed.generation == 2)
        latch.open()
        guard case .skipped(let why, _) = try await held.value else {
            Issue.record("A stored an answer over a newer generation")
            return
        }
        #expect(why.contains("replaced"))
        await #expect(try nodes.first.metadata(nodes.id).generation == 2)
        #expect(nodes.first.engine.counters.answersLostToTakeover == 0)
    }

    @Test func aNodeWhoseCounterMovesIsNeverTakenOver() async throws {
        let nodes = try await Nodes()
        let (latch, held) = try await nodes.startHeldRefreshOnA()
        for _ in 0..<4 {
            await nodes.secondWatches(for: Self.period / 2)
            #expect(await nodes.first.engine.leases.beat())
        }
        #expect(Self.keptOff(try await nodes.second.refresh(nodes.id, reason: .forced)))
        latch.open()
        guard case .refreshed = try await held.value else {
            Issue.record("the live node's refresh did not commit")
            return
        }
        #expect(nodes.first.provider.presentedTwice.isEmpty)
    }

    /// The database down for everyone: B's own beats fail, so what it saw before does not count;
    /// after it is back, A gets a whole period again.
    @Test func anOutageForEveryoneIsNotSilence() async throws {
        let nodes = try await Nodes()
        let (latch, held) = try await nodes.startHeldRefreshOnA()
        await nodes.secondWatches(for: Self.period - 10)
        // B's beat failing: a database that went away under it.
        nodes.second.leases.lostContactForTesting()
        nodes.first.testVault.clock.advance(seconds: 300)
        await nodes.secondWatches(for: 15)
        #expect(Self.keptOff(try await nodes.second.refresh(nodes.id, reason: .forced)))
        latch.open()
        guard case .refreshed = try await held.value else {
            Issue.record("the held answer was not committed")
            return
        }
        #expect(nodes.first.provider.presentedTwice.isEmpty)
    }

    /// Seen silent, but it beat once since B last looked: the journalling transaction reads the
    /// counter again and keeps off.
    @Test func aBeatJustBeforeTheTakeoverWins() async throws {
        let nodes = try await Nodes()
        let (latch, held) = try await nodes.startHeldRefreshOnA()
        await nodes.secondWatches(for: Self.period + 5)
        #expect(await nodes.first.engine.leases.beat())
        #expect(Self.keptOff(try await nodes.second.refresh(nodes.id, reason: .forced)))
        latch.open()
        _ = try await held.value
        #expect(nodes.first.provider.presentedTwice.isEmpty)
    }

    /// `tokenvault nodes forget`: the operator's word that a node is gone releases its attempts at
    /// once.
    @Test func aForgottenNodesAttemptsAreResumedAtOnce() async throws {
        let nodes = try await Nodes()
        let (latch, held) = try await nodes.startHeldRefreshOnA()
        #expect(await nodes.second.leases.beat())
        #expect(Self.keptOff(try await nodes.second.refresh(nodes.id, reason: .forced)))
        await #expect(try nodes.first.testVault.database.forgetNode("node-a") == 1)
        await #expect(try nodes.first.testVault.database.nodes().map(\.node) == ["node-b"])
        guard case .refreshed = try await nodes.second.refresh(nodes.id, reason: .forced) else {
            Issue.record("the forgotten node's attempt was not resumed")
            return
        }
        latch.open()
        guard case .skipped = try await held.value else {
            Issue.record("the forgotten node stored an answer over a newer generation")
            return
        }
        await #expect(try nodes.first.testVault.database.forgetNode("no-such-node") == nil)
    }
}
