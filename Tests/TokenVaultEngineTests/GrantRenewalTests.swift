import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultEngine

/// Credentials the engine obtains and renews by their grant (client credentials, token exchange),
/// with a fake clock and a scripted provider: planned like a refresh, renewed by the grant (never a
/// refresh); a refusal is the grant's own, never a credential's `needs_reauth`, and pauses the
/// instance only when the server refused the client.
@Suite struct GrantRenewalTests {
    static let grant = CredentialGrant(scopes: ["reports.read"], audiences: ["https://api.example"])

    static func obtain(_ fixture: EngineFixture, _ name: String, labels: [String: String] = [:]) async throws
        -> CredentialMetadata
    {
        try await fixture.engine.obtain(
            CredentialAcquisition(
                id: try CredentialID("tests/\(name)"), provider: fixture.provider.name, grant: grant, labels: labels))
    }

    /// Keeps `name` as a token derived from `subject` (a token exchange grant).
    static func derive(
        _ fixture: EngineFixture, _ name: String, from subject: CredentialID,
        _ grant: CredentialGrant = CredentialGrant(type: .tokenExchange, scopes: ["read"])
    ) async throws -> CredentialMetadata {
        var grant = grant
        grant.subject = subject
        return try await fixture.engine.obtain(
            CredentialAcquisition(id: try CredentialID("tests/\(name)"), provider: fixture.provider.name, grant: grant))
    }

    @Test func obtainedThenRenewedByTheGrantBeforeExpiry() async throws {
        let fixture = try EngineFixture(planner: RefreshPlanner(jitterFraction: 0))
        let stored = try await Self.obtain(fixture, "machine", labels: ["team": "reports"])
        #expect(stored.generation == 1 && stored.grant == Self.grant && !stored.hasRefreshToken)
        #expect(stored.isRenewable && stored.labels == ["team": "reports"])
        #expect(stored.scopes == ["reports.read"], "the grant's scopes when the answer names none")
        // Planned like a refresh: three quarters into the hour, not at expiry.
        #expect(stored.refreshAt == stored.issuedAt.adding(seconds: 2700))

        fixture.testVault.clock.advance(seconds: 2700)
        guard case .refreshed(let renewed) = try await fixture.engine.refresh(stored.id, reason: .scheduled) else {
            Issue.record("the grant was not renewed")
            return
        }
        #expect(renewed.generation == 2 && renewed.grant == Self.grant && !renewed.hasRefreshToken)
        #expect(!renewed.hasIDToken && renewed.subject == nil, "no person's id token or subject is kept")
        #expect(renewed.refreshAt == renewed.issuedAt.adding(seconds: 2700))
        #expect(fixture.provider.grants == [Self.grant, Self.grant])
        // The put's grant is asked unkeyed; the renewal under its journalled attempt's key, which
        // the courier keeps its answer under through a restart.
        let keys = fixture.provider.refreshCallKeys
        #expect(keys.count == 2 && keys[0] == nil && keys[1]?.hasPrefix("refresh:") == true, "\(keys)")
        let reread = try await fixture.metadata(stored.id)
        #expect(reread.grant == Self.grant, "the grant is stored")
        let secrets = try await fixture.secrets(stored.id)
        #expect(secrets.refreshToken == nil && secrets.idToken == nil)
    }

    /// A token read wanting more time than is left renews by the grant on demand.
    @Test func aTokenReadRenewsOnDemand() async throws {
        let fixture = try EngineFixture()
        let stored = try await Self.obtain(fixture, "machine")
        fixture.testVault.clock.advance(seconds: 3590)
        guard case .refreshed(let renewed) = try await fixture.engine.refreshOnDemand(stored.id, minimumTTL: 60) else {
            Issue.record("not renewed on demand")
            return
        }
        #expect(renewed.generation == 2 && fixture.provider.grants.count == 2)
    }

    /// `invalid_grant` to a client's own grant kills no person's grant: the credential fails and is
    /// probed slowly, and is renewed once the server accepts the grant again.
    @Test func invalidGrantIsAMisconfigurationNotNeedsReauth() async throws {
        let fixture = try EngineFixture()
        let stored = try await Self.obtain(fixture, "machine")
        fixture.provider.script(.fail(.testInvalidGrant))
        fixture.testVault.clock.advance(seconds: 3000)
        let outcome = try await fixture.engine.refresh(stored.id, reason: .scheduled)
        guard case .failed(let failure, let metadata?) = outcome else { Issue.record("\(outcome)"); return }
        #expect(failure.kind == .misconfigured && failure.code == .invalidGrant)
        #expect(metadata.status == .failing && metadata.lastError?.code == "invalid_grant")
        let probe = try #require(metadata.refreshAt)
        #expect(probe.seconds - fixture.testVault.clock.now.seconds >= 250, "a slow probe")
        fixture.testVault.clock.advance(seconds: probe.seconds - fixture.testVault.clock.now.seconds + 1)
        let probed = try await fixture.engine.refresh(stored.id, reason: .scheduled)
        guard case .refreshed(let renewed) = probed else {
            Issue.record("the probe did not renew: \(probed)")
            return
        }
        #expect(renewed.status == .active && renewed.lastError == nil)
    }

    /// `unauthorized_client` refuses this grant type only: the client's refreshes go on, so the
    /// instance is not paused for one credential's grant.
    /// Nor do other refusals of grants (a scope, an audience), however many credentials meet them:
    /// three refreshes refused as misconfigured would pause the instance.
    @Test func unauthorizedClientDoesNotPauseTheInstance() async throws {
        let fixture = try EngineFixture()
        var ids: [CredentialID] = []
        for name in ["m1", "m2", "m3", "m4"] { ids.append(try await Self.obtain(fixture, name).id) }
        let refusal = ProviderFailure(
            kind: .misconfigured, code: "unauthorized_client", message: "no service account", httpStatus: 400)
        fixture.provider.script(.fail(refusal), .fail(refusal), .fail(refusal), .fail(refusal))
        fixture.testVault.clock.advance(seconds: 3000)
        for id in ids { _ = try await fixture.engine.refresh(id, reason: .scheduled) }
        #expect(fixture.engine.providerStates().first?.condition == .ok)
        #expect(try await fixture.metadata(ids[3]).lastError?.code == "unauthorized_client")
        #expect(fixture.provider.grants.count == 8, "every renewal went out")
    }

    /// A put never becomes the probe of a paused instance: after the pause it is refused, and the
    /// next scheduled refresh probes (a put's failure that said nothing of the instance would
    /// leave the probe unanswered, and the instance paused for good).
    @Test func aPutNeverProbesAPausedInstance() async throws {
        let fixture = try EngineFixture(limits: ProviderLimits(breakerThreshold: 1, breakerCooldown: 30))
        let (person, _) = try await fixture.store("person")
        fixture.provider.script(.fail(.testUnavailable))
        fixture.testVault.clock.advance(seconds: 3000)
        _ = try await fixture.engine.refresh(person, reason: .scheduled)
        #expect(fixture.engine.providerStates().first?.condition == .circuitOpen)
        fixture.testVault.clock.advance(seconds: 120)
        let calls = fixture.provider.calls
        await #expect(throws: ProviderFailure.self) { _ = try await Self.obtain(fixture, "machine") }
        #expect(fixture.provider.calls == calls, "the put was not sent")
        guard case .refreshed = try await fixture.engine.refresh(person, reason: .forced) else {
            Issue.record("the refresh did not probe the instance")
            return
        }
        #expect(fixture.engine.providerStates().first?.condition == .ok)
    }

    /// A client the server refuses is every grant's problem: one credential's renewal pauses the
    /// instance (a refresh needs `limits.misconfigured_credentials` different credentials). A put
    /// while it is paused sends nothing and says when to come back.
    @Test func aRefusedClientPausesTheInstanceAtOnceAndPutsWait() async throws {
        let fixture = try EngineFixture()
        let stored = try await Self.obtain(fixture, "machine")
        fixture.provider.script(.fail(.testInvalidClient))
        fixture.testVault.clock.advance(seconds: 3000)
        _ = try await fixture.engine.refresh(stored.id, reason: .scheduled)
        let state = fixture.engine.providerStates().first
        #expect(state?.condition == .misconfigured && state?.detail?.contains("invalid_client") == true)
        #expect(try await fixture.metadata(stored.id).status == .failing)
        let calls = fixture.provider.calls
        do {
            _ = try await Self.obtain(fixture, "another")
            Issue.record("a put went out to a paused instance")
        } catch let failure as ProviderFailure {
            #expect(failure.code == .providerPaused && failure.kind == .transient && failure.retryAfter != nil)
        }
        #expect(fixture.provider.calls == calls)
    }

    /// A refused first grant stores nothing, and a refused client pauses the instance there too.
    @Test func aRefusedFirstGrantStoresNothing() async throws {
        let fixture = try EngineFixture()
        fixture.provider.script(.fail(.testInvalidClient))
        await #expect(throws: ProviderFailure.self) { _ = try await Self.obtain(fixture, "machine") }
        await #expect(throws: VaultError.self) { _ = try await fixture.metadata(try CredentialID("tests/machine")) }
        #expect(fixture.engine.providerStates().first?.condition == .misconfigured)
    }

    /// Tokens put over a credential obtained by a grant replace it whole: the grant goes too, and
    /// the credential is renewed by its refresh token from then on.
    @Test func aPutOfTokensDropsTheGrant() async throws {
        let fixture = try EngineFixture()
        let stored = try await Self.obtain(fixture, "machine")
        let (_, replaced) = try await fixture.store("machine")
        #expect(replaced.generation == stored.generation + 1 && replaced.grant == nil && replaced.hasRefreshToken)
    }

    /// A derived token kept as a credential of its own: obtained by exchanging the subject's access
    /// token, and renewed by exchanging the subject's current one, the subject refreshed first
    /// when it is about to expire.
    @Test func aTokenExchangeGrantExchangesTheSubjectsCurrentToken() async throws {
        let fixture = try EngineFixture(planner: RefreshPlanner(jitterFraction: 0))
        let (subject, _) = try await fixture.store("person", lifetime: 600)
        let derived = try await Self.derive(
            fixture, "derived", from: subject, CredentialGrant(type: .tokenExchange, audiences: ["https://api.example"])
        )
        #expect(derived.grant?.subject == subject && !derived.hasRefreshToken && derived.generation == 1)
        #expect(derived.grant?.subjectCreatedAt == (try await fixture.metadata(subject)).createdAt)
        #expect(fixture.provider.exchangedSubjects == ["at-initial-person"])
        #expect(fixture.provider.grants.isEmpty, "no client credentials grant")

        // The subject's token has run out when the derived credential is due: the subject is
        // refreshed first, and its new token is the one exchanged.
        fixture.testVault.clock.advance(seconds: 2700)
        guard case .refreshed(let renewed) = try await fixture.engine.refresh(derived.id, reason: .scheduled) else {
            Issue.record("not renewed")
            return
        }
        #expect(renewed.generation == 2)
        let subjectNow = try await fixture.metadata(subject)
        #expect(subjectNow.generation == 2, "the subject was refreshed first")
        let current = try await fixture.secrets(subject).accessToken.revealString()
        #expect(fixture.provider.exchangedSubjects == ["at-initial-person", current])
    }

    /// A subject that is gone fails the derived credential's renewal with `subject_unavailable`:
    /// nothing is sent, the credential is failing and tried again, and the instance is not
    /// paused, since nothing was learnt of it.
    @Test func aGoneSubjectFailsTheRenewalWithoutPausingTheInstance() async throws {
        let fixture = try EngineFixture()
        let (subject, _) = try await fixture.store("person")
        let derived = try await Self.derive(fixture, "derived", from: subject)
        try await fixture.vault.delete(subject)
        let calls = fixture.provider.calls
        for _ in 0..<6 {
            fixture.testVault.clock.advance(seconds: 3000)
            _ = try await fixture.engine.refresh(derived.id, reason: .scheduled)
        }
        let failing = try await fixture.metadata(derived.id)
        #expect(failing.status == .failing && failing.lastError?.code == "subject_unavailable", "\(failing)")
        #expect(failing.refreshAt != nil, "tried again")
        #expect(fixture.provider.calls == calls, "nothing was sent")
        #expect(fixture.engine.providerStates().first?.condition == .ok)
    }

    /// The subject is read and refreshed before the derived credential takes the instance's only
    /// concurrency slot: with `limits.concurrency` 1 the subject's refresh cannot wait behind the
    /// renewal that needs it.
    @Test func theSubjectIsRefreshedOutsideTheInstancesSlot() async throws {
        let fixture = try EngineFixture(limits: ProviderLimits(concurrency: 1))
        let (subject, _) = try await fixture.store("person", lifetime: 600)
        let derived = try await Self.derive(fixture, "derived", from: subject)
        fixture.testVault.clock.advance(seconds: 3000)
        let started = ContinuousClock.now
        guard case .refreshed = try await fixture.engine.refresh(derived.id, reason: .scheduled) else {
            Issue.record("not renewed")
            return
        }
        #expect(ContinuousClock.now - started < .seconds(2), "no wait for a slot")
        let current = try await fixture.secrets(subject).accessToken.revealString()
        #expect(fixture.provider.exchangedSubjects.last == current && current != "at-initial-person")
    }

    /// A subject removed and stored again (by whoever) is another credential: it is not exchanged.
    /// Nor is one moved to another provider instance.
    @Test func aReplacedOrMovedSubjectIsNotExchanged() async throws {
        let fixture = try EngineFixture()
        let (subject, _) = try await fixture.store("person")
        let derived = try await Self.derive(fixture, "derived", from: subject)
        fixture.testVault.clock.advance(seconds: 10)
        try await fixture.vault.delete(subject)
        try await fixture.store("person")
        fixture.testVault.clock.advance(seconds: 3000)
        _ = try await fixture.engine.refresh(derived.id, reason: .scheduled)
        let failing = try await fixture.metadata(derived.id)
        #expect(
            failing.lastError?.code == "subject_unavailable" && failing.lastError?.message.contains("again") == true)
        #expect(fixture.provider.exchangedSubjects == ["at-initial-person"], "only the first subject was exchanged")

        let (other, _) = try await fixture.store("other")
        let moved = try await Self.derive(fixture, "moved", from: other)
        try await fixture.store("other", provider: "elsewhere")
        fixture.testVault.clock.advance(seconds: 3000)
        _ = try await fixture.engine.refresh(moved.id, reason: .scheduled)
        #expect(try await fixture.metadata(moved.id).lastError?.message.contains("elsewhere") == true)
    }
}
