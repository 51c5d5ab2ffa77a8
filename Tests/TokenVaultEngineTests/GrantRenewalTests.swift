import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultEngine

/// Credentials the engine obtains and renews by their grant (client credentials), with a fake
/// clock and a scripted provider: planned like a refresh, renewed by the grant (never a refresh),
/// and a refusal is the instance's misconfiguration, never a credential's `needs_reauth`.
@Suite struct GrantRenewalTests {
    static let grant = CredentialGrant(scopes: ["reports.read"], audiences: ["https://api.example"])

    static func obtain(_ fixture: EngineFixture, _ name: String, labels: [String: String] = [:]) async throws
        -> CredentialMetadata
    {
        try await fixture.engine.obtain(
            CredentialAcquisition(
                id: try CredentialID("tests/\(name)"), provider: fixture.provider.name, grant: grant, labels: labels))
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

    /// A client the server refuses is every grant's problem: one credential's renewal pauses the
    /// instance (a refresh needs `limits.misconfigured_credentials` different credentials).
    @Test func aRefusedClientPausesTheInstanceAtOnce() async throws {
        let fixture = try EngineFixture()
        let stored = try await Self.obtain(fixture, "machine")
        fixture.provider.script(.fail(.testInvalidClient))
        fixture.testVault.clock.advance(seconds: 3000)
        _ = try await fixture.engine.refresh(stored.id, reason: .scheduled)
        let state = fixture.engine.providerStates().first
        #expect(state?.condition == .misconfigured && state?.detail?.contains("invalid_client") == true)
        #expect(try await fixture.metadata(stored.id).status == .failing)
    }

    /// `unauthorized_client` refuses this grant type only: the client's refreshes go on, so the
    /// instance is not paused for one credential's grant.
    @Test func unauthorizedClientDoesNotPauseTheInstance() async throws {
        let fixture = try EngineFixture()
        let stored = try await Self.obtain(fixture, "machine")
        fixture.provider.script(
            .fail(
                ProviderFailure(
                    kind: .misconfigured, code: "unauthorized_client", message: "no service account", httpStatus: 400)))
        fixture.testVault.clock.advance(seconds: 3000)
        _ = try await fixture.engine.refresh(stored.id, reason: .scheduled)
        #expect(fixture.engine.providerStates().first?.condition == .ok)
        #expect(try await fixture.metadata(stored.id).lastError?.code == "unauthorized_client")
    }

    /// A put while the instance is paused sends nothing and says when to come back.
    @Test func aPutWhileTheInstanceIsPausedSendsNothing() async throws {
        let fixture = try EngineFixture()
        let stored = try await Self.obtain(fixture, "machine")
        fixture.provider.script(.fail(.testInvalidClient))
        fixture.testVault.clock.advance(seconds: 3000)
        _ = try await fixture.engine.refresh(stored.id, reason: .scheduled)
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
        let grant = CredentialGrant(type: .tokenExchange, audiences: ["https://api.example"], subject: subject)
        let derived = try await fixture.engine.obtain(
            CredentialAcquisition(id: try CredentialID("tests/derived"), provider: fixture.provider.name, grant: grant))
        #expect(derived.grant == grant && !derived.hasRefreshToken && derived.generation == 1)
        #expect(fixture.provider.exchangedSubjects == ["at-initial-person"])
        #expect(fixture.provider.grants.isEmpty, "no client credentials grant")

        // The subject has under a minute left when the derived credential is due: it is refreshed
        // first, and its new token is the one exchanged.
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
        let grant = CredentialGrant(type: .tokenExchange, scopes: ["read"], subject: subject)
        let derived = try await fixture.engine.obtain(
            CredentialAcquisition(id: try CredentialID("tests/derived"), provider: fixture.provider.name, grant: grant))
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
}
