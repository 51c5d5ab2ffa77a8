import Foundation
import Testing
import TokenVaultCore
import TokenVaultLedger
import TokenVaultTesting

@testable import TokenVaultEngine

/// The engine against a real SQLite vault and a scripted provider: journal, single flight,
/// commits, failure handling, recovery and revocation.
@Suite struct RefreshEngineTests {
    @Test func aRefreshStoresNewTokensDurablyAndClosesTheAttempt() async throws {
        let fixture = try EngineFixture()
        let (id, before) = try await fixture.store("a")
        let events = fixture.vault.events.subscribe(to: id)
        let outcome = try await fixture.engine.refresh(id, reason: .forced)
        guard case .refreshed(let after) = outcome else { Issue.record("not refreshed: \(outcome)"); return }
        #expect(after.generation == before.generation + 1)
        #expect(after.status == .active && after.lastError == nil && after.refreshFailures == 0)
        let secrets = try await fixture.secrets(id)
        #expect(secrets.accessToken.revealString().hasPrefix("at-scripted-1-"))
        #expect(secrets.refreshToken!.revealString().hasPrefix("rt-scripted-1-"))
        await #expect(try fixture.metadata(id) == after)
        let journal = try await fixture.testVault.database.openAttempts(limit: 10)
        #expect(journal.isEmpty)
        // A succeeded attempt is not kept (the new generation records it).
        let farFuture = Timestamp(milliseconds: 1 << 50)
        await #expect(try fixture.testVault.database.pruneFinishedAttempts(before: farFuture, limit: 10) == 0)
        var iterator = events.makeAsyncIterator()
        let event = await iterator.next()
        #expect(event?.kind == .refreshed && event?.metadata?.generation == after.generation)
    }

    /// The call key goes to the provider in the request, and the send time of an answer the
    /// courier kept through a restart comes back in the payload: the new tokens' lifetimes count
    /// from that request, not from the restart.
    @Test func theCallKeyGoesInTheRequestAndARecoveredSendTimeComesBackInThePayload() async throws {
        let fixture = try EngineFixture()
        let (id, _) = try await fixture.store("a")
        let sentEarlier = fixture.vault.clock.now.adding(seconds: -600)
        fixture.provider.script(.recovered(sentAt: sentEarlier, lifetime: 3600))
        guard case .refreshed(let after) = try await fixture.engine.refresh(id, reason: .forced) else {
            Issue.record("not refreshed")
            return
        }
        #expect(after.issuedAt == sentEarlier)
        #expect(after.expiresAt == sentEarlier.adding(seconds: 3600))
        let keys = fixture.provider.refreshCallKeys
        #expect(keys.count == 1 && keys[0]?.hasPrefix("refresh:") == true, "\(keys)")
    }

    @Test func aResponseWithoutARefreshTokenKeepsTheOldOne() async throws {
        let fixture = try EngineFixture()
        let (id, _) = try await fixture.store("keep", refreshToken: "rt-kept")
        fixture.provider.script(.succeed(lifetime: 600, rotate: false))
        _ = try await fixture.engine.refresh(id, reason: .forced)
        await #expect(try fixture.secrets(id).refreshToken?.revealString() == "rt-kept")
        await #expect(try fixture.metadata(id).hasRefreshToken)
    }

    @Test func concurrentRequestsJoinOneRefresh() async throws {
        let fixture = try EngineFixture()
        let (id, _) = try await fixture.store("flight")
        fixture.provider.script(.delay(0.3), .succeed())
        let outcomes = await withTaskGroup(of: RefreshOutcome?.self) { group in
            for _ in 0..<20 { group.addTask { try? await fixture.engine.refresh(id, reason: .onDemand) } }
            return await group.reduce(into: [RefreshOutcome?]()) { $0.append($1) }
        }
        #expect(fixture.provider.calls == 1)
        #expect(fixture.provider.presentedTwice.isEmpty)
        let generations = Set(
            outcomes.compactMap { outcome -> Int64? in
                if case .refreshed(let metadata)? = outcome { return metadata.generation }
                return nil
            })
        #expect(generations == [2])
    }

    @Test func invalidGrantMarksNeedsReauthAndIsNeverRetried() async throws {
        let fixture = try EngineFixture()
        let (id, _) = try await fixture.store("dead")
        fixture.provider.script(.fail(.testInvalidGrant))
        let outcome = try await fixture.engine.refresh(id, reason: .forced)
        guard case .failed(let failure, let metadata?) = outcome else { Issue.record("\(outcome)"); return }
        #expect(failure.kind == .invalidGrant)
        #expect(metadata.status == .needsReauth && metadata.refreshAt == nil)
        #expect(metadata.lastError?.code == "invalid_grant")
        #expect(metadata.lastError?.message.contains("sign in again") == true)
        // Still there: never a silent delete. And not retried.
        let again = try await fixture.engine.refresh(id, reason: .forced)
        guard case .skipped = again else { Issue.record("\(again)"); return }
        #expect(fixture.provider.calls == 1)
        await #expect(try fixture.secrets(id).accessToken.revealString() == "at-initial-dead")
    }

    /// Reads asking for a fresher token than a failing credential holds: the first refreshes on
    /// demand, the next is held back by the per-credential limit, and its answer still says why
    /// the token is not fresh (the last failure), not only that a limit applies.
    @Test func anOnDemandRefreshHeldBackByTheLimitNamesTheLastFailure() async throws {
        let fixture = try EngineFixture()
        let (id, _) = try await fixture.store("limited")
        fixture.provider.script(.fail(.testUnavailable))
        _ = try await fixture.engine.refreshOnDemand(id, minimumTTL: 86_400)
        let second = try await fixture.engine.refreshOnDemand(id, minimumTTL: 86_400)
        guard case .skipped(let reason, _) = second else { Issue.record("\(second)"); return }
        #expect(reason.contains("limited to one per") && reason.contains("failed: http_503"), "\(reason)")
        #expect(fixture.provider.calls == 1)
    }

    /// Forced refreshes follow `limits.on_demand_refresh_seconds` (here 30 s, then 2 s), counted
    /// from the credential's last provider answer or PUT: sooner is `.tooSoon` with the seconds
    /// left, and nothing is sent. (The server used a fixed 10 s whatever the setting said.)
    @Test func theOnDemandIntervalGovernsForcedRefreshes() async throws {
        for interval in [30.0, 2.0] {
            var options = RefreshEngine.Options()
            options.onDemandInterval = interval
            let fixture = try EngineFixture(options: options)
            let (id, _) = try await fixture.store("forced")
            guard case .tooSoon(let wait, let reason) = try await fixture.engine.refreshForced(id) else {
                Issue.record("a forced refresh right after the PUT was not held back")
                continue
            }
            #expect(wait == Int(interval) && reason.contains("limits.on_demand_refresh_seconds"), "\(reason)")
            fixture.testVault.clock.advance(seconds: interval - 1)
            guard case .tooSoon(1, _) = try await fixture.engine.refreshForced(id) else {
                Issue.record("held back for less than \(interval) s")
                continue
            }
            fixture.testVault.clock.advance(seconds: 1)
            guard case .refreshed = try await fixture.engine.refreshForced(id) else {
                Issue.record("not refreshed after \(interval) s")
                continue
            }
            guard case .tooSoon = try await fixture.engine.refreshForced(id) else {
                Issue.record("a second forced refresh at once was not held back")
                continue
            }
            #expect(fixture.provider.calls == 1)
        }
    }

    /// A call whose answer was lost, then one the courier could not even send (it replaces the
    /// credential's last error), then the provider's rejection of the same token: the reason
    /// still says an earlier answer was lost (the courier resilience test once saw it not).
    @Test func aLostAnswerIsRememberedAcrossACallThatWasNotSent() async throws {
        let fixture = try EngineFixture()
        let (id, _) = try await fixture.store("lost-then-unsent")
        fixture.provider.script(.fail(.courierLost), .fail(.courierUnavailable), .fail(.testInvalidGrant))
        for _ in 0..<2 { _ = try await fixture.engine.refresh(id, reason: .forced) }
        await #expect(try fixture.metadata(id).lastError?.code == "courier_unavailable")
        let outcome = try await fixture.engine.refresh(id, reason: .forced)
        guard case .failed(_, let after?) = outcome else { Issue.record("\(outcome)"); return }
        #expect(after.status == .needsReauth)
        #expect(after.lastError?.message.contains("answer was lost") == true, "\(after.lastError?.message ?? "")")
    }

    /// A call made before the spool was read (the courier never started: an earlier daemon's
    /// courier may still hold the answer) leaves its attempt open, for the daemon whose courier
    /// reads that answer; a call the courier could not take closes it.
    @Test func anAttemptWhoseCallFoundTheSpoolUnreadStaysOpen() async throws {
        let fixture = try EngineFixture()
        let (unread, _) = try await fixture.store("spool-unread")
        let (unsent, _) = try await fixture.store("courier-down")
        fixture.provider.script(.fail(.courierNotReady), .fail(.courierUnavailable))
        _ = try await fixture.engine.refresh(unread, reason: .forced)
        _ = try await fixture.engine.refresh(unsent, reason: .forced)
        let open = try await fixture.vault.openAttempts(limit: 10).map(\.credentialID)
        #expect(open == [unread], "\(open)")
    }

    @Test func transientFailureBacksOffAndKeepsTheToken() async throws {
        let fixture = try EngineFixture()
        let (id, _) = try await fixture.store("flaky")
        fixture.provider.script(.fail(.testUnavailable))
        let now = fixture.vault.clock.now
        _ = try await fixture.engine.refresh(id, reason: .forced)
        let metadata = try await fixture.metadata(id)
        #expect(metadata.status == .failing && metadata.refreshFailures == 1)
        #expect(metadata.lastError?.code == "http_503")
        let wait = metadata.refreshAt!.seconds - now.seconds
        #expect(wait > 0 && wait <= ProviderLimits().retry.base + 0.01)
        await #expect(try fixture.secrets(id).accessToken.revealString() == "at-initial-flaky")
        // Token reads in a loop wait for the backoff instead of calling the provider again.
        let onDemand = try await fixture.engine.refresh(id, reason: .onDemand)
        guard case .skipped(let reason, _) = onDemand else { Issue.record("\(onDemand)"); return }
        #expect(reason.contains("http_503") && fixture.provider.calls == 1)
        // The failed attempt is kept for diagnosis until pruned.
        await #expect(
            try fixture.testVault.database.pruneFinishedAttempts(before: Timestamp(milliseconds: 1 << 50), limit: 10)
                == 1)
        // The next success clears the failure.
        _ = try await fixture.engine.refresh(id, reason: .forced)
        let recovered = try await fixture.metadata(id)
        #expect(recovered.status == .active && recovered.refreshFailures == 0 && recovered.lastError == nil)
    }

    @Test func retryAfterIsHonoured() async throws {
        let fixture = try EngineFixture()
        let (id, _) = try await fixture.store("slow-down")
        var failure = ProviderFailure.testUnavailable
        failure.retryAfter = 120
        fixture.provider.script(.fail(failure))
        let now = fixture.vault.clock.now
        _ = try await fixture.engine.refresh(id, reason: .forced)
        let wait = try await fixture.metadata(id).refreshAt!.seconds - now.seconds
        #expect(wait >= 120 && wait <= 132.01)
    }

    @Test func anInterruptedAttemptIsResumedWithTheSameRefreshToken() async throws {
        let fixture = try EngineFixture()
        let (id, metadata) = try await fixture.store("crashed", refreshToken: "rt-before-crash")
        // A previous run of this node journalled an attempt and died.
        let stale = RefreshAttempt(
            attemptID: "attempt-from-dead-process", credentialID: id, generation: metadata.generation,
            refreshTokenFingerprint: fixture.testVault.keyring.fingerprint(SecretBytes(utf8: "rt-before-crash")),
            leaseOwner: LeaseName.owner(node: RefreshEngine.Options().node, incarnation: "dead"),
            leaseExpiresAt: fixture.vault.clock.now.adding(seconds: 60),
            startedAt: fixture.vault.clock.now)
        try await fixture.testVault.database.write(durability: .full) { try await $0.beginAttempt(stale) }
        fixture.provider.script(.fail(.testInvalidGrant))
        let outcome = try await fixture.engine.refresh(id, reason: .recovery)
        guard case .failed(_, let after?) = outcome else { Issue.record("\(outcome)"); return }
        #expect(after.status == .needsReauth)
        #expect(after.lastError?.message.contains("answer was lost") == true)
        #expect(fixture.engine.counters.recovered == 1)
        let journal = fixture.testVault.database
        await #expect(try journal.openAttempts(limit: 10).isEmpty)
    }

    @Test func anotherLiveProcessesLeaseKeepsUsOff() async throws {
        let fixture = try EngineFixture()
        let (id, metadata) = try await fixture.store("leased")
        let foreign = RefreshAttempt(
            attemptID: "other-host-attempt", credentialID: id, generation: metadata.generation,
            refreshTokenFingerprint: "00", leaseOwner: "other-node/abc",
            leaseExpiresAt: fixture.vault.clock.now.adding(seconds: 60), startedAt: fixture.vault.clock.now)
        try await fixture.testVault.database.write(durability: .full) { try await $0.beginAttempt(foreign) }
        let outcome = try await fixture.engine.refresh(id, reason: .forced)
        guard case .skipped(let reason, _) = outcome else { Issue.record("\(outcome)"); return }
        #expect(reason.contains("lease"))
        #expect(fixture.provider.calls == 0)
        // Its recorded end passing changes nothing: leases are not judged by time.
        fixture.testVault.clock.advance(seconds: 61)
        #expect(await fixture.engine.leases.beat())
        guard case .skipped = try await fixture.engine.refresh(id, reason: .forced) else {
            Issue.record("taken over when its lease's recorded end passed")
            return
        }
        // Its node seen silent (no row at all) for a whole lease period: taken over.
        for _ in 0..<6 {
            fixture.testVault.clock.advance(seconds: 50)
            #expect(await fixture.engine.leases.beat())
        }
        let later = try await fixture.engine.refresh(id, reason: .forced)
        guard case .refreshed = later else { Issue.record("\(later)"); return }
    }

    @Test func aLostAnswerThenInvalidGrantSaysWhy() async throws {
        let fixture = try EngineFixture()
        let (id, _) = try await fixture.store("lost")
        fixture.provider.script(.fail(.testTimeout), .fail(.testInvalidGrant))
        _ = try await fixture.engine.refresh(id, reason: .forced)
        await #expect(try fixture.metadata(id).status == .failing)
        _ = try await fixture.engine.refresh(id, reason: .forced)
        let metadata = try await fixture.metadata(id)
        #expect(metadata.status == .needsReauth)
        #expect(metadata.lastError?.message.contains("answer was lost") == true)
        // Both attempts presented the same (unchanged) refresh token: that is the retry rule.
        #expect(fixture.provider.presentedTwice == ["rt-initial-lost"])
    }

    @Test func aCredentialReplacedDuringTheRefreshIsNotOverwritten() async throws {
        let fixture = try EngineFixture()
        let (id, _) = try await fixture.store("replaced")
        fixture.provider.script(.delay(0.5), .succeed())
        async let refresh = fixture.engine.refresh(id, reason: .forced)
        #expect(try await waitUntil { fixture.provider.calls == 1 })  // the provider has the old token
        try await fixture.store("replaced", refreshToken: "rt-from-new-sign-in")
        let outcome = try await refresh
        guard case .skipped = outcome else { Issue.record("\(outcome)"); return }
        await #expect(try fixture.secrets(id).refreshToken?.revealString() == "rt-from-new-sign-in")
    }

    @Test func anUnconfiguredProviderIsReportedNotHammered() async throws {
        let fixture = try EngineFixture()
        let (id, _) = try await fixture.store("orphan", provider: "nowhere")
        let outcome = try await fixture.engine.refresh(id, reason: .forced)
        guard case .failed(let failure, let metadata?) = outcome else { Issue.record("\(outcome)"); return }
        #expect(failure.code == "provider_not_configured")
        #expect(metadata.status == .failing)
        #expect(metadata.refreshAt! > fixture.vault.clock.now.adding(seconds: 250))
    }

    @Test func repeatedTransientFailuresOpenTheBreakerAndDeferTheRest() async throws {
        let limits = ProviderLimits(breakerThreshold: 3, breakerCooldown: 30)
        let fixture = try EngineFixture(limits: limits)
        var ids: [CredentialID] = []
        for index in 0..<5 { await ids.append(try fixture.store("c\(index)").0) }
        fixture.provider.script(.fail(.testUnavailable), .fail(.testUnavailable), .fail(.testUnavailable))
        fixture.testVault.clock.advance(seconds: 3000)  // everything is due
        for id in ids.prefix(3) { _ = try await fixture.engine.refresh(id, reason: .scheduled) }
        #expect(fixture.engine.providerStates().first?.condition == .circuitOpen)
        let outcome = try await fixture.engine.refresh(ids[4], reason: .scheduled)
        guard case .skipped(let reason, _) = outcome else { Issue.record("\(outcome)"); return }
        #expect(reason.contains("paused"))
        #expect(fixture.provider.calls == 3)
        // Deferred past the breaker's reopening, not hammered.
        await #expect(try fixture.metadata(ids[4]).refreshAt! >= fixture.vault.clock.now.adding(seconds: 30))
        // After the cooldown one probe goes out and its success closes the breaker.
        fixture.testVault.clock.advance(seconds: 31)
        _ = try await fixture.engine.refresh(ids[4], reason: .forced)
        #expect(fixture.engine.providerStates().first?.condition == .ok)
    }

    /// A misconfiguration met by three different credentials (the default of
    /// `limits.misconfigured_credentials`) pauses the instance: nobody else's refresh goes out.
    @Test func invalidClientAcrossCredentialsPausesTheProviderAsMisconfigured() async throws {
        let fixture = try EngineFixture()
        var ids: [CredentialID] = []
        for name in ["a", "b", "c", "d"] { ids.append(try await fixture.store(name).0) }
        fixture.provider.script(.fail(.testInvalidClient), .fail(.testInvalidClient), .fail(.testInvalidClient))
        fixture.testVault.clock.advance(seconds: 3000)  // all are due
        for id in ids.prefix(2) { _ = try await fixture.engine.refresh(id, reason: .scheduled) }
        #expect(fixture.engine.providerStates().first?.condition == .ok, "two credentials are not yet the client")
        _ = try await fixture.engine.refresh(ids[2], reason: .scheduled)
        let state = fixture.engine.providerStates().first
        #expect(state?.condition == .misconfigured)
        #expect(state?.detail?.contains("invalid_client") == true)
        _ = try await fixture.engine.refresh(ids[3], reason: .scheduled)
        #expect(fixture.provider.calls == 3)
    }

    /// One credential's `invalid_scope` (or any 4xx a crafted token provokes) is that
    /// credential's problem: it backs off slowly, and the others keep refreshing.
    @Test func oneCredentialsMisconfigurationDoesNotPauseTheInstance() async throws {
        let fixture = try EngineFixture()
        let (bad, _) = try await fixture.store("bad")
        let (good, _) = try await fixture.store("good")
        fixture.provider.script(
            .fail(ProviderFailure(kind: .misconfigured, code: "invalid_scope", message: "scope not allowed")))
        fixture.testVault.clock.advance(seconds: 3000)
        _ = try await fixture.engine.refresh(bad, reason: .scheduled)
        #expect(fixture.engine.providerStates().first?.condition == .ok)
        let badAfter = try await fixture.metadata(bad)
        #expect(badAfter.status == .failing && badAfter.lastError?.code == "invalid_scope")
        #expect((badAfter.refreshAt?.seconds ?? 0) - fixture.testVault.clock.now.seconds >= 250, "a slow probe")
        guard case .refreshed = try await fixture.engine.refresh(good, reason: .scheduled) else {
            Issue.record("the other credential must still refresh")
            return
        }
        #expect(fixture.provider.calls == 2)
    }

    @Test func removalRevokesRefreshThenAccessTokenAndDeletes() async throws {
        let fixture = try EngineFixture()
        let (id, _) = try await fixture.store("bye", refreshToken: "rt-bye")
        let outcome = try await fixture.engine.remove(id, force: false, audit: nil)
        #expect(outcome == .deleted(revoked: true))
        #expect(fixture.provider.revocations.map(\.token) == ["rt-bye", "at-initial-bye"])
        #expect(fixture.provider.revocations.map(\.hint) == [.refreshToken, .accessToken])
        await #expect(throws: VaultError.self) { try await fixture.metadata(id) }
    }

    /// Another node's refresh was with the provider as the removal began, and stores its new
    /// tokens while the removal revokes the old ones: the removal does not delete them unrevoked.
    /// The credential stays pending removal, and the next try revokes the new tokens and deletes.
    @Test func tokensStoredByARefreshDuringARemovalAreRevokedBeforeTheRowGoes() async throws {
        let fixture = try EngineFixture()
        let (id, planned) = try await fixture.store("race", refreshToken: "rt-old")
        let vault = fixture.vault
        let request = Vault.AttemptRequest(
            metadata: planned, fingerprint: "fp", owner: "node-a/1",
            leaseUntil: fixture.testVault.clock.now.adding(seconds: 60), isOwnerGone: { _, _ in false })
        let (attempt, _) = try #require(try await vault.beginAttempt(request))
        let previous = try await vault.credential(id)
        fixture.provider.beforeNextRevocation {
            let payload = TokenPayload(
                kind: .oauth2,
                secrets: CredentialSecrets(
                    accessToken: SecretBytes(utf8: "at-new"), refreshToken: SecretBytes(utf8: "rt-new")),
                tokenType: "Bearer", expiry: .after(seconds: 3600))
            _ = await vault.commitRefresh(
                .init(
                    attempt: attempt, previous: planned, previousSecrets: previous.secrets, payload: payload,
                    sentAt: fixture.testVault.clock.now))
        }
        let outcome = try await fixture.engine.remove(id, force: false, audit: nil)
        guard case .revokePending(let after, let failure) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(failure.code == .refreshedDuringRemoval)
        #expect(after.generation == planned.generation + 1 && after.status == .revokePending)
        #expect(fixture.provider.revocations.map(\.token) == ["rt-old", "at-initial-race"])

        let retry = try await fixture.engine.refresh(id, reason: .scheduled)
        #expect(
            fixture.provider.revocations.map(\.token) == ["rt-old", "at-initial-race", "rt-new", "at-new"], "\(retry)")
        await #expect(throws: VaultError.self) { try await fixture.metadata(id) }
    }

    /// A credential deleted while the provider was answering its refresh (another node's removal
    /// that finished first): the tokens received are not stored, and they are revoked, since
    /// nobody holds them and a removal means revoked.
    @Test func tokensReceivedForACredentialDeletedMeanwhileAreRevoked() async throws {
        let fixture = try EngineFixture()
        let (id, _) = try await fixture.store("gone", refreshToken: "rt-gone")
        let latch = Latch()
        fixture.provider.script(.hold(latch))
        let refresh = Task { try await fixture.engine.refresh(id, reason: .forced) }
        #expect(try await waitUntil { latch.arrived == 1 })
        try await fixture.vault.delete(id)
        latch.open()
        guard case .skipped(let why, _) = try await refresh.value else {
            Issue.record("the refresh of a deleted credential was not skipped")
            return
        }
        #expect(why.contains("deleted"), "\(why)")
        let revoked = fixture.provider.revocations
        #expect(revoked.map(\.hint) == [.refreshToken, .accessToken], "\(revoked.map(\.hint))")
        #expect(revoked.allSatisfy { $0.token.hasPrefix("rt-scripted-") || $0.token.hasPrefix("at-scripted-") })
    }

    /// Replaced while the provider was answering (a put of new tokens, or a delete and store
    /// again): the row is someone's, so the tokens received are dropped and nothing is revoked
    /// (a provider that revokes per user and client would end the new grant too).
    @Test func tokensReceivedForACredentialReplacedMeanwhileAreNotRevoked() async throws {
        let fixture = try EngineFixture()
        for storedAgain in [false, true] {
            let (id, _) = try await fixture.store("replaced-\(storedAgain)", refreshToken: "rt-replaced")
            let latch = Latch()
            fixture.provider.script(.hold(latch))
            let refresh = Task { try await fixture.engine.refresh(id, reason: .forced) }
            #expect(try await waitUntil { latch.arrived == 1 })
            if storedAgain {
                fixture.testVault.clock.advance(seconds: 1)
                try await fixture.vault.delete(id)
            }
            _ = try await fixture.store("replaced-\(storedAgain)", refreshToken: "rt-new-sign-in")
            latch.open()
            guard case .skipped = try await refresh.value else {
                Issue.record("the refresh of a replaced credential was not skipped")
                return
            }
            #expect(fixture.provider.revocations.isEmpty)
            await #expect(try fixture.vault.credential(id).secrets.refreshToken?.revealString() == "rt-new-sign-in")
        }
    }

    @Test func failedRevocationLeavesTheCredentialRevokePendingUnlessForced() async throws {
        let fixture = try EngineFixture(options: .init(revocationAttempts: 2))
        let (id, _) = try await fixture.store("stuck")
        fixture.provider.failRevocations(.testUnavailable, .testUnavailable)
        let outcome = try await fixture.engine.remove(id, force: false, audit: nil)
        guard case .revokePending(let metadata, let failure) = outcome else { Issue.record("\(outcome)"); return }
        #expect(metadata.status == .revokePending && failure.code == "http_503")
        #expect(metadata.refreshAt != nil)
        // Its token is no longer refreshed or served as fresh.
        let refresh = try await fixture.engine.refresh(id, reason: .forced)
        guard case .skipped = refresh else { Issue.record("\(refresh)"); return }
        // The background retry (the scheduler's path) completes it.
        fixture.testVault.clock.advance(seconds: 600)
        _ = try await fixture.engine.refresh(id, reason: .scheduled)
        await #expect(throws: VaultError.self) { try await fixture.metadata(id) }

        let (forced, _) = try await fixture.store("forced")
        fixture.provider.failRevocations(.testUnavailable)
        #expect(try await fixture.engine.remove(forced, force: true, audit: nil) == .deleted(revoked: false))
        await #expect(throws: VaultError.self) { try await fixture.metadata(forced) }
    }

    @Test func noTokenValueReachesTheLogs() async throws {
        let fixture = try EngineFixture()
        let (id, _) = try await fixture.store("secret", refreshToken: "rt-must-not-leak")
        fixture.provider.script(.fail(.testTimeout), .fail(.testUnavailable), .succeed())
        for _ in 0..<3 { _ = try await fixture.engine.refresh(id, reason: .forced) }
        _ = try await fixture.engine.remove(id, force: false, audit: nil)
        let logs = fixture.logs.text
        #expect(!logs.isEmpty)
        #expect(!logs.contains("rt-must-not-leak") && !logs.contains("at-initial-secret"))
        #expect(!logs.contains("at-scripted") && !logs.contains("rt-scripted"))
    }
}

/// Two engines on one database file, as two processes would be: the journal's lease lets only
/// one of them present the refresh token.
@Suite struct CrossProcessLeaseTests {
    @Test func twoProcessesOnOneDatabaseRefreshOnce() async throws {
        let first = try EngineFixture(provider: ScriptedProvider(name: "shared"), options: Self.options("node-a"))
        let (id, _) = try await first.store("contended")
        // The second "process": its own connection to the same file, its own engine.
        let (database, keyring) = try first.testVault.reopen(masterKey: first.testVault.masterKey)
        let vault = Vault(store: database, sealer: keyring, clock: first.testVault.clock)
        let second = RefreshEngine(
            vault: vault, providers: ["shared": first.provider],
            settings: ["shared": ProviderSettings(name: "shared", kind: "oauth2")], options: Self.options("node-b"),
            logger: first.logs.logger)
        first.provider.script(.delay(0.5), .succeed())
        async let a = first.engine.refresh(id, reason: .forced)
        async let b = second.refresh(id, reason: .forced)
        let outcomes = try await [a, b]
        #expect(first.provider.calls == 1)
        #expect(first.provider.presentedTwice.isEmpty)
        let refreshed = outcomes.filter { if case .refreshed = $0 { true } else { false } }
        let kept = outcomes.filter { if case .skipped(let reason, _) = $0 { reason.contains("lease") } else { false } }
        #expect(refreshed.count == 1 && kept.count == 1, "\(outcomes)")
        // Read from the file: each "process" caches rows and sees its own writes only (a daemon
        // holds the file's lock, so no second writer exists outside this test).
        let (check, _) = try first.testVault.reopen(masterKey: first.testVault.masterKey)
        defer { check.close() }
        await #expect(try check.record(id)?.metadata.generation == 2)
    }

    static func options(_ node: String) -> RefreshEngine.Options {
        var options = RefreshEngine.Options()
        options.node = node
        return options
    }
}

/// Credentials that cannot be refreshed are retired at their expiry, once.
@Suite struct ExpiryTests {
    @Test func anExpiredVerifyTokenIsPurgedWithAnEvent() async throws {
        let fixture = try EngineFixture()
        let id = try CredentialID("tests/ebs")
        let payload = try TokenPayloadDecoder().decode(Array(#"{"verify_token": "verify-secret", "expired": 60}"#.utf8))
        let stored = try await fixture.vault.put(id, payload: payload, provider: "ebs")
        #expect(stored.refreshAt == stored.expiresAt)
        let events = fixture.vault.events.subscribe(to: id)
        // Not before its expiry.
        _ = try await fixture.engine.refresh(id, reason: .scheduled)
        await #expect(try fixture.metadata(id).kind == .verifyToken)
        fixture.testVault.clock.advance(seconds: 61)
        _ = try await fixture.engine.refresh(id, reason: .scheduled)
        await #expect(throws: VaultError.self) { try await fixture.metadata(id) }
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next()?.kind == .deleted)
        #expect(fixture.provider.calls == 0)
        let audit = fixture.testVault.database
        await #expect(
            try audit.auditEvents(after: nil, credentialID: id, limit: 10).contains {
                $0.event.operation == "credential.purge"
            })
    }

    @Test func anAccessTokenWithoutRefreshTokenEndsExpired() async throws {
        let fixture = try EngineFixture()
        let id = try CredentialID("tests/offline-denied")
        let payload = TokenPayload(
            kind: .oauth2, secrets: CredentialSecrets(accessToken: SecretBytes(utf8: "at-only")),
            expiry: .after(seconds: 1800))
        try await fixture.vault.put(id, payload: payload, provider: "scripted")
        fixture.testVault.clock.advance(seconds: 1801)
        _ = try await fixture.engine.refresh(id, reason: .scheduled)
        let metadata = try await fixture.metadata(id)
        #expect(metadata.status == .expired && metadata.refreshAt == nil && metadata.lastError?.code == "expired")
        #expect(fixture.provider.calls == 0)
    }

    @Test func theEBSExpiryUnitIsASetting() throws {
        let body = Array(#"{"verify_token": "v", "expired": "1795000600000"}"#.utf8)
        let payload = try TokenPayloadDecoder(expiredUnit: .unixMilliseconds).decode(body)
        #expect(payload.expiry == .at(Timestamp(milliseconds: 1_795_000_600_000)))
        let relative = try TokenPayloadDecoder(expiredUnit: .milliseconds).decode(
            Array(#"{"verify_token": "v", "expired": 90000}"#.utf8))
        #expect(relative.expiry == .after(seconds: 90))
    }
}
