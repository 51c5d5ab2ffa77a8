import Foundation
import Testing
import TokenVaultCore
import TokenVaultLedger
import TokenVaultTesting

@testable import TokenVaultEngine

/// Device grants the engine polls (RFC 8628), on a fake clock against the in-process server of
/// `SignInTests`: when a poll is due, what each answer does to the grant, and that one poll
/// sequence runs per grant however many engines share the store.
@Suite struct DeviceGrantTests {
    typealias Fixture = SignInTests.Fixture

    static func answer(_ code: String, status: Int = 400) -> ProviderFailure {
        ProviderFailure(
            kind: code == "access_denied" || code == "expired_token" ? .invalidGrant : .misconfigured,
            code: ProviderFailure.Code(rawValue: code), message: code, httpStatus: status)
    }

    static let id = try! CredentialID("ns/device")

    func startDevice(_ fixture: Fixture, uid: UInt32 = 1000) async throws -> StartedSignIn {
        try await fixture.engine.startSignIn(
            SignInStart(
                credentialID: Self.id, provider: fixture.server.name, redirectURI: nil, scopes: ["profile"],
                labels: ["via": "device"], mode: .device,
                audit: fixture.audit(Self.id.description, uid: uid, .credentialAuthorize)))
    }

    func pending(_ fixture: Fixture) async throws -> [PendingDeviceSignIn] {
        try await fixture.vault.devicePolls(for: Self.id)
    }

    @Test func pollsAtTheIntervalSlowsDownWhenToldAndStoresTheTokens() async throws {
        let fixture = try Fixture()
        fixture.server.state.withLock {
            $0.deviceAnswers = [Self.answer("authorization_pending"), Self.answer("slow_down"), nil]
        }
        let events = fixture.vault.events.subscribe(to: Self.id)
        let started = try await startDevice(fixture)
        #expect(started.device?.userCode == "WDJB-MJHT" && started.device?.interval == 5)
        // Until it ends, a reader sees the credential waiting; the engine sees none.
        let waiting = try await fixture.vault.shownMetadata(Self.id)
        #expect(waiting.status == .pendingAuthorization && waiting.generation == 0 && !waiting.hasRefreshToken)
        await #expect(throws: VaultError.notFound(Self.id)) { _ = try await fixture.vault.metadata(Self.id) }
        #expect(
            started.authorizationURL == nil && started.expiresAt == fixture.testVault.clock.now.adding(seconds: 600))
        // Not due before the interval.
        #expect(await fixture.engine.pollDueDeviceSignIns().isEmpty)
        fixture.testVault.clock.advance(seconds: 5)
        #expect(await fixture.engine.pollDueDeviceSignIns() == [Self.id: .pending])
        #expect(await fixture.engine.pollDueDeviceSignIns().isEmpty, "polled again before the interval")
        fixture.testVault.clock.advance(seconds: 5)
        #expect(await fixture.engine.pollDueDeviceSignIns() == [Self.id: .slowDown(interval: 10)])
        #expect(try await pending(fixture).first?.interval == 10)
        fixture.testVault.clock.advance(seconds: 5)
        #expect(await fixture.engine.pollDueDeviceSignIns().isEmpty, "slow_down did not add 5 s")
        fixture.testVault.clock.advance(seconds: 5)
        #expect(await fixture.engine.pollDueDeviceSignIns() == [Self.id: .stored])
        #expect(fixture.server.state.withLock { $0.devicePolls } == 3)
        let metadata = try await fixture.vault.metadata(Self.id)
        #expect(metadata.generation == 1 && metadata.labels == ["via": "device"] && metadata.status == .active)
        #expect(try await fixture.vault.shownMetadata(Self.id) == metadata)
        #expect(try await pending(fixture).isEmpty)
        // The streams hear the tokens stored, then the grant authorized; the counters count it.
        fixture.vault.events.close()
        var heard: [CredentialEvent] = []
        for await event in events { heard.append(event) }
        #expect(heard.map(\.kind) == [.stored, .authorized], "\(heard.map(\.kind))")
        #expect(heard.last?.metadata?.generation == 1)
        #expect(
            fixture.engine.counters.deviceSignInsAuthorized == 1 && fixture.engine.counters.deviceSignInsFailed == 0)
        // The audit trail says who authorized it.
        let rows = try await fixture.vault.auditEvents(AuditQuery(.newestFirst, credentialID: Self.id, limit: 10))
        let authorized = try #require(rows.first { $0.event.operation == AuditOperation.credentialAuthorized.name })
        #expect(authorized.event.outcome == .allowed && authorized.event.uid == 1000)
    }

    @Test func aDenialOrTheExpiryEndsTheGrantWithNothingStored() async throws {
        for (answer, advance, reason) in [
            (Self.answer("access_denied"), 5.0, "access_denied"), (Self.answer("expired_token"), 5, "expired_token"),
            (nil, 601, "expired_token"),
        ] {
            let fixture = try Fixture()
            fixture.server.state.withLock { $0.deviceAnswers = [answer ?? Self.answer("authorization_pending")] }
            let events = fixture.vault.events.subscribe(to: Self.id)
            _ = try await startDevice(fixture)
            fixture.testVault.clock.advance(seconds: advance)
            #expect(await fixture.engine.pollDueDeviceSignIns() == [Self.id: .ended(reason: reason)])
            fixture.vault.events.close()
            var heard: [CredentialEvent] = []
            for await event in events { heard.append(event) }
            #expect(heard.map(\.kind) == [.authorizationFailed] && heard.first?.reason == reason)
            #expect(heard.first?.metadata == nil)
            #expect(fixture.engine.counters.deviceSignInsFailed == 1)
            await #expect(throws: VaultError.notFound(Self.id)) { _ = try await fixture.vault.shownMetadata(Self.id) }
            // The expiry ends it without asking the server.
            #expect(fixture.server.state.withLock { $0.devicePolls } == (answer == nil ? 0 : 1))
            #expect(try await pending(fixture).isEmpty)
            await #expect(throws: VaultError.notFound(Self.id)) { _ = try await fixture.vault.metadata(Self.id) }
            let rows = try await fixture.vault.auditEvents(AuditQuery(.newestFirst, credentialID: Self.id, limit: 10))
            let failed = try #require(rows.first { $0.event.operation == AuditOperation.credentialAuthorized.name })
            #expect(failed.event.outcome == .failed && failed.event.detail == reason)
        }
    }

    @Test func aServerThatFailsIsPolledAgainLater() async throws {
        let fixture = try Fixture()
        fixture.server.state.withLock {
            $0.deviceAnswers = [
                ProviderFailure(kind: .transient, code: .http(503), message: "down", retryAfter: 30, httpStatus: 503)
            ]
        }
        _ = try await startDevice(fixture)
        fixture.testVault.clock.advance(seconds: 5)
        #expect(await fixture.engine.pollDueDeviceSignIns() == [Self.id: .retry])
        // Retry-After is honoured over the interval.
        fixture.testVault.clock.advance(seconds: 29)
        #expect(await fixture.engine.pollDueDeviceSignIns().isEmpty)
        fixture.testVault.clock.advance(seconds: 1)
        #expect(await fixture.engine.pollDueDeviceSignIns() == [Self.id: .stored])
    }

    /// A daemon that died after the grant's tokens were committed and before its row went (or a
    /// commit the ledger held while the database was down): the next look ends the grant as
    /// authorized, without presenting the spent code or announcing a failure.
    @Test func aGrantWhoseTokensAreStoredEndsAuthorizedWithoutAnotherPoll() async throws {
        let fixture = try Fixture()
        _ = try await startDevice(fixture)
        let pending = try #require(try await pending(fixture).first)
        // The redeeming poll as the dead daemon made it: stored under the grant's call key, the
        // row left behind.
        _ = try await fixture.engine.redeem(
            CodeRedemption(
                provider: fixture.server.name,
                request: CodeExchangeRequest(
                    code: pending.deviceCode, codeVerifier: nil, redirectURI: "", credentialID: Self.id,
                    grant: .deviceCode),
                nonce: nil, idTokenRequired: false, labels: nil,
                audit: fixture.audit(Self.id.description, uid: 1000, .credentialAuthorized)),
            callKey: RefreshEngine.callKey(pending))
        fixture.server.state.withLock { $0.deviceAnswers = [Self.answer("invalid_grant")] }
        let polls = fixture.server.state.withLock { $0.devicePolls }
        fixture.testVault.clock.advance(seconds: 5)
        #expect(await fixture.engine.pollDueDeviceSignIns() == [Self.id: .stored])
        #expect(fixture.server.state.withLock { $0.devicePolls } == polls, "the spent code was presented again")
        #expect(try await self.pending(fixture).isEmpty)
        let rows = try await fixture.vault.auditEvents(AuditQuery(.newestFirst, credentialID: Self.id, limit: 10))
        #expect(!rows.contains { $0.event.outcome == .failed }, "a failure was recorded for stored tokens")
    }

    /// A credential whose refresh token was refused shows `pending_authorization` while a device
    /// sign-in into it waits, and `needs_reauth` again when the person refuses; one with tokens
    /// to serve keeps its status.
    @Test func aCredentialThatNeedsASignInShowsItWaitingForOne() async throws {
        let fixture = try Fixture()
        _ = try await fixture.vault.put(
            Self.id,
            payload: TokenPayload(
                kind: .oauth2,
                secrets: CredentialSecrets(
                    accessToken: SecretBytes(utf8: "old"), refreshToken: SecretBytes(utf8: "rt")),
                tokenType: "Bearer", expiry: .after(seconds: 60)),
            provider: fixture.server.name, labels: ["owner": "billing"])
        _ = try await startDevice(fixture)
        #expect(
            try await fixture.vault.shownMetadata(Self.id).status == .active, "a servable credential is not waiting")
        // The server refuses the refresh token: the credential needs the sign-in under way.
        _ = try await fixture.engine.refresh(Self.id, reason: .forced)
        let shown = try await fixture.vault.shownMetadata(Self.id)
        #expect(shown.status == .pendingAuthorization && shown.labels == ["owner": "billing"] && shown.generation == 1)
        #expect(try await fixture.vault.metadata(Self.id).status == .needsReauth)
        let events = fixture.vault.events.subscribe(to: Self.id)
        fixture.server.state.withLock { $0.deviceAnswers = [Self.answer("access_denied")] }
        fixture.testVault.clock.advance(seconds: 5)
        #expect(await fixture.engine.pollDueDeviceSignIns() == [Self.id: .ended(reason: "access_denied")])
        fixture.vault.events.close()
        var heard: [CredentialEvent] = []
        for await event in events { heard.append(event) }
        #expect(heard.map(\.kind) == [.authorizationFailed] && heard.first?.metadata?.status == .needsReauth)
        #expect(try await fixture.vault.shownMetadata(Self.id).status == .needsReauth)
    }

    /// A caller at its limit of waiting sign-ins is refused before the server is asked for
    /// codes it could not use.
    @Test func aCallerAtItsLimitIsRefusedBeforeTheServerIssuesCodes() async throws {
        let fixture = try Fixture(limits: SignInLimits(expirySeconds: 60, maximumPendingPerUID: 1))
        _ = try await startDevice(fixture)
        do {
            _ = try await startDevice(fixture)
            Issue.record("a second device sign-in was started over the limit")
        } catch let error as VaultError {
            #expect(error.code == .tooManyAuthorizations)
        }
        #expect(fixture.server.state.withLock { $0.deviceAuthorizations } == 1, "the server issued unusable codes")
        _ = try await startDevice(fixture, uid: 1001)
        #expect(fixture.server.state.withLock { $0.deviceAuthorizations } == 2)
    }

    /// Two engines (two nodes of one vault) looking at once: the grant is polled once.
    @Test func twoEnginesPollAGrantOnce() async throws {
        let fixture = try Fixture()
        fixture.server.state.withLock {
            $0.deviceAnswers = Array(repeating: Self.answer("authorization_pending"), count: 10)
        }
        var options = RefreshEngine.Options()
        options.node = "node-2"
        let second = RefreshEngine(
            vault: fixture.vault, providers: [fixture.server.name: fixture.server],
            settings: [fixture.server.name: ProviderSettings(name: fixture.server.name, kind: "oauth2")],
            options: options, logger: CapturedLogs().logger)
        _ = try await startDevice(fixture)
        for _ in 0..<3 {
            fixture.testVault.clock.advance(seconds: 5)
            async let first = fixture.engine.pollDueDeviceSignIns()
            async let other = second.pollDueDeviceSignIns()
            let outcomes = await [first, other]
            #expect(outcomes.map(\.count).reduce(0, +) == 1, "\(outcomes)")
        }
        #expect(fixture.server.state.withLock { $0.devicePolls } == 3)
    }

    /// A caller without `credential:write` (its grant keeps the subject) repairs only the same
    /// account: tokens for another person end the grant.
    @Test func aGrantThatKeepsTheSubjectRefusesAnotherAccount() async throws {
        let fixture = try Fixture()
        try await fixture.vault.put(
            Self.id,
            payload: TokenPayload(
                kind: .oauth2, secrets: CredentialSecrets(accessToken: SecretBytes(utf8: "x")), tokenType: "Bearer",
                expiry: .after(seconds: 60), subject: "person-9"),
            provider: fixture.server.name)
        var start = SignInStart(
            credentialID: Self.id, provider: fixture.server.name, redirectURI: nil, scopes: ["profile"], mode: .device,
            audit: fixture.audit(Self.id.description, uid: 1000, .credentialAuthorize), keepsSubject: true)
        start.labels = nil
        _ = try await fixture.engine.startSignIn(start)
        fixture.testVault.clock.advance(seconds: 5)
        #expect(await fixture.engine.pollDueDeviceSignIns() == [Self.id: .ended(reason: "authorization_mismatch")])
        #expect(try await fixture.vault.metadata(Self.id).subject == "person-9")
    }
}
