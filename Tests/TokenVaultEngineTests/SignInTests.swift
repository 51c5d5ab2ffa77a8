import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultLedger
import TokenVaultTesting

@testable import TokenVaultEngine

/// Sign-ins the engine starts and finishes, against an authorization server in process: what the
/// state, verifier and nonce must be, and every way a finish is refused with nothing stored. The
/// wire (a real authorization server, PAR, the daemon) is tested end to end.
@Suite struct SignInTests {
    /// An `oauth2`-like instance: the server it describes, pushed requests it records, and code
    /// exchanges that answer a token set whose id token carries the nonce it is told to.
    final class Server: SignInProvider, Sendable {
        struct State {
            var server: AuthorizationServer
            var pushed: [[(name: String, value: String)]] = []
            var exchanges: [(code: String, verifier: String?, redirectURI: String)] = []
            var idTokenNonce: String?
            var idTokenIssuer = "https://as.example"
            var subject = "person-1"
            var exchangeFailure: ProviderFailure?
            /// What each device poll answers in turn: a failure (`authorization_pending`…) or,
            /// for nil or once they run out, tokens.
            var deviceAnswers: [ProviderFailure?] = []
            var devicePolls = 0
            var deviceAuthorizations = 0
        }

        let name = "signin"
        let supportsRevocation = false
        var clientID: String? { "client-1" }
        let state: Mutex<State>
        let clock: FakeClock

        init(clock: FakeClock, par: Bool = false, sendsIssuer: Bool = false) {
            self.clock = clock
            state = Mutex(
                State(
                    server: AuthorizationServer(
                        authorizationEndpoint: "https://as.example/authorize",
                        pushedAuthorizationRequestEndpoint: par ? "https://as.example/par" : nil,
                        issuer: "https://as.example", sendsIssuer: sendsIssuer, clientID: "client-1",
                        redirectURIs: ["https://app.example/cb", "http://127.0.0.1/done"],
                        extraParameters: ["acr_values"])))
        }

        func authorizationServer() async throws(ProviderFailure) -> AuthorizationServer {
            state.withLock { $0.server }
        }

        func pushAuthorizationRequest(_ parameters: [(name: String, value: String)]) async throws(ProviderFailure)
            -> PushedAuthorizationRequest
        {
            state.withLock { $0.pushed.append(parameters) }
            return PushedAuthorizationRequest(requestURI: "urn:ietf:params:oauth:request_uri:abc", expiresIn: 90)
        }

        func requestDeviceAuthorization(scopes: [String], extra: [String: String]) async throws(ProviderFailure)
            -> DeviceAuthorization
        {
            let count = state.withLock {
                $0.deviceAuthorizations += 1
                return $0.deviceAuthorizations
            }
            return DeviceAuthorization(
                deviceCode: SecretBytes(utf8: "device-code-\(count)"),
                userCode: DeviceUserCode(
                    userCode: "WDJB-MJHT", verificationURI: "https://as.example/device",
                    verificationURIComplete: nil, interval: 5),
                expiresIn: 600, issuer: "https://as.example")
        }

        func exchange(_ request: CodeExchangeRequest) async throws(ProviderFailure) -> TokenPayload {
            if request.grant == .deviceCode {
                let answer = state.withLock { state -> ProviderFailure? in
                    state.devicePolls += 1
                    return state.deviceAnswers.isEmpty ? nil : state.deviceAnswers.removeFirst()
                }
                if let answer { throw answer }
            }
            let (failure, nonce, issuer, subject) = state.withLock { state in
                state.exchanges.append(
                    (request.code.revealString(), request.codeVerifier?.revealString(), request.redirectURI))
                return (state.exchangeFailure, state.idTokenNonce, state.idTokenIssuer, state.subject)
            }
            if let failure { throw failure }
            var claims: [String: Any] = [
                "iss": issuer, "aud": "client-1", "sub": "person-1", "exp": clock.now.seconds + 600,
            ]
            if let nonce { claims["nonce"] = nonce }
            let body = try! JSONSerialization.data(withJSONObject: claims)
            let idToken = "eyJhbGciOiJSUzI1NiJ9." + Base64URL.encode(Array(body)) + ".c2ln"
            return TokenPayload(
                kind: .oauth2,
                secrets: CredentialSecrets(
                    accessToken: SecretBytes(utf8: "at-\(UUID().uuidString)"),
                    refreshToken: SecretBytes(utf8: "rt-\(UUID().uuidString)"), idToken: SecretBytes(utf8: idToken)),
                tokenType: "Bearer", expiry: .after(seconds: 3600), subject: subject)
        }

        func refresh(_ request: RefreshRequest) async throws(ProviderFailure) -> TokenPayload {
            throw ProviderFailure.testInvalidGrant
        }

        func revoke(_ token: SecretBytes, hint: TokenHint, call: ProviderCall?) async throws(ProviderFailure) {}
    }

    struct Fixture {
        let testVault: TestVault
        let server: Server
        let engine: RefreshEngine

        init(par: Bool = false, sendsIssuer: Bool = false, limits: SignInLimits = SignInLimits()) throws {
            testVault = try TestVault()
            server = Server(clock: testVault.clock, par: par, sendsIssuer: sendsIssuer)
            var options = RefreshEngine.Options()
            options.signIn = limits
            engine = RefreshEngine(
                vault: testVault.vault, providers: [server.name: server],
                settings: [server.name: ProviderSettings(name: server.name, kind: "oauth2")], options: options,
                logger: CapturedLogs().logger)
        }

        var vault: Vault { testVault.vault }

        func start(
            _ id: String = "ns/person", uid: UInt32 = 1000, scopes: [String] = ["openid", "profile"],
            redirectURI: String = "https://app.example/cb", mode: SignInStart.Mode = .url,
            labels: [String: String]? = nil
        ) async throws -> StartedSignIn {
            try await engine.startSignIn(
                SignInStart(
                    credentialID: try CredentialID(id), provider: server.name, redirectURI: redirectURI,
                    scopes: scopes, extra: ["acr_values": "loa3"], labels: labels, mode: mode,
                    audit: audit(id, uid: uid, .credentialAuthorize)))
        }

        func finish(
            _ pairs: [(name: String, value: String)], id: String = "ns/person", uid: UInt32 = 1000,
            keepsSubject: Bool = false
        ) async throws -> RedeemedCode {
            try await engine.finishSignIn(
                SignInFinish(
                    credentialID: try CredentialID(id), callback: try AuthorizationCallback.parse(pairs),
                    audit: audit(id, uid: uid, .credentialAuthorized), keepsSubject: keepsSubject))
        }

        func audit(_ id: String, uid: UInt32, _ operation: AuditOperation) -> AuditEvent {
            AuditEvent(
                at: testVault.clock.now, uid: uid, gid: uid, pid: 1, operation: operation,
                credentialID: try? CredentialID(id), outcome: .allowed)
        }
    }

    /// The authorization URL's query parameters.
    static func query(_ url: String) throws -> [String: String] {
        let query = try #require(url.split(separator: "?", maxSplits: 1).last)
        let pairs = try #require(FormEncoding.decode(query))
        return Dictionary(pairs.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// A finish as the redirect would bring it for the started sign-in.
    static func callback(_ started: StartedSignIn, code: String = "code-1") throws -> [(name: String, value: String)] {
        [("code", code), ("state", try query(try #require(started.authorizationURL))["state"] ?? "")]
    }

    @Test func aSignInIsStartedWithStateVerifierAndNonceAndFinishedOnce() async throws {
        let fixture = try Fixture()
        let started = try await fixture.start(labels: ["team": "a"])
        let url = try #require(started.authorizationURL)
        #expect(url.hasPrefix("https://as.example/authorize?"))
        let query = try Self.query(url)
        #expect(query["response_type"] == "code" && query["client_id"] == "client-1")
        #expect(query["redirect_uri"] == "https://app.example/cb" && query["scope"] == "openid profile")
        #expect(query["code_challenge_method"] == "S256" && query["acr_values"] == "loa3")
        // 32 random bytes, base64url: 43 characters each.
        let state = try #require(query["state"])
        #expect(state.count == 43 && query["nonce"]?.count == 43 && query["code_challenge"]?.count == 43)
        #expect(started.expiresAt == fixture.testVault.clock.now.adding(seconds: 600))
        #expect(!started.pushed)

        fixture.server.state.withLock { $0.idTokenNonce = query["nonce"] }
        let redeemed = try await fixture.finish(try Self.callback(started))
        guard case .committed(let metadata) = redeemed.stored else {
            Issue.record("not committed")
            return
        }
        #expect(metadata.id.description == "ns/person" && metadata.generation == 1 && metadata.labels == ["team": "a"])
        // The verifier sent with the code is the one the challenge was made from.
        let exchange = try #require(fixture.server.state.withLock { $0.exchanges.first })
        let verifier = try #require(exchange.verifier)
        #expect(verifier.count == 43 && exchange.code == "code-1" && exchange.redirectURI == "https://app.example/cb")
        let challenge = Base64URL.encode(fixture.testVault.keyring.sha256(SecretBytes(utf8: verifier)))
        #expect(challenge == query["code_challenge"])

        // The state is spent.
        await #expect(throws: VaultError.self) { _ = try await fixture.finish(try Self.callback(started)) }
        do {
            _ = try await fixture.finish(try Self.callback(started))
        } catch let error as VaultError {
            #expect(error.code == .authorizationUnknown)
        }
        #expect(fixture.server.state.withLock { $0.exchanges.count } == 1)
    }

    /// Finishes refused with nothing stored and nothing sent to the token endpoint, each with its
    /// code; every one of them spends the state.
    @Test func refusedFinishesStoreNothing() async throws {
        func refused(
            _ expected: VaultError.Code, fixture given: Fixture? = nil, before: (Fixture) -> Void = { _ in },
            _ finish: (Fixture, StartedSignIn) async throws -> Void
        ) async throws {
            let fixture = try given ?? Fixture()
            let started = try await fixture.start()
            before(fixture)
            do {
                try await finish(fixture, started)
                Issue.record("\(expected) was not refused")
            } catch let error as VaultError {
                #expect(error.code == expected, "\(error)")
            }
            #expect(fixture.server.state.withLock { $0.exchanges.isEmpty }, "\(expected)")
            await #expect(throws: VaultError.self) {
                _ = try await fixture.vault.metadata(try CredentialID("ns/person"))
            }
            // Spent: the right caller with the right credential cannot use it any more.
            do {
                _ = try await fixture.finish(try Self.callback(started))
                Issue.record("the state was not spent by \(expected)")
            } catch let error as VaultError {
                #expect(error.code == .authorizationUnknown)
            }
        }
        try await refused(.authorizationMismatch) { fixture, started in
            _ = try await fixture.finish(try Self.callback(started), id: "ns/other")
        }
        try await refused(.authorizationMismatch) { fixture, started in
            _ = try await fixture.finish(try Self.callback(started), uid: 1001)
        }
        try await refused(.authorizationExpired, before: { $0.testVault.clock.advance(seconds: 601) }) {
            fixture, started in
            _ = try await fixture.finish(try Self.callback(started))
        }
        try await refused(.issuerMismatch) { fixture, started in
            _ = try await fixture.finish(try Self.callback(started) + [("iss", "https://evil.example")])
        }
        try await refused(.issuerMismatch, fixture: try Fixture(sendsIssuer: true)) { fixture, started in
            _ = try await fixture.finish(try Self.callback(started))
        }
        try await refused(.authorizationDenied) { fixture, started in
            let state = try Self.query(try #require(started.authorizationURL))["state"] ?? ""
            _ = try await fixture.finish([
                ("error", "access_denied"), ("error_description", "the user said no"), ("state", state),
            ])
        }
    }

    @Test func anIDTokenWithoutTheNonceOrFromAnotherIssuerIsNotStored() async throws {
        for wrong in ["nonce", "issuer"] {
            let fixture = try Fixture()
            let started = try await fixture.start()
            let nonce = try Self.query(try #require(started.authorizationURL))["nonce"]
            fixture.server.state.withLock { state in
                state.idTokenNonce = wrong == "nonce" ? "another" : nonce
                if wrong == "issuer" { state.idTokenIssuer = "https://elsewhere.example" }
            }
            do {
                _ = try await fixture.finish(try Self.callback(started))
                Issue.record("an id token with the wrong \(wrong) was accepted")
            } catch let error as VaultError {
                #expect(error.code == (wrong == "nonce" ? .nonceMismatch : .issuerMismatch))
            }
            await #expect(throws: VaultError.self) {
                _ = try await fixture.vault.metadata(try CredentialID("ns/person"))
            }
        }
    }

    @Test func aCallbackWithTheIssuerItExpectsIsFinished() async throws {
        let fixture = try Fixture(sendsIssuer: true)
        let started = try await fixture.start(scopes: ["read"])
        // A nonce even without openid: an id token the server sends unasked is bound too.
        #expect(try Self.query(try #require(started.authorizationURL))["nonce"]?.count == 43)
        fixture.server.state.withLock { $0.idTokenNonce = try? Self.query(started.authorizationURL ?? "")["nonce"] }
        let redeemed = try await fixture.finish(try Self.callback(started) + [("iss", "https://as.example")])
        #expect(redeemed.payload.secrets.idToken != nil)
    }

    @Test func onlyRegisteredRedirectURIsAndLoopbackOnAnyPort() async throws {
        let fixture = try Fixture()
        for uri in ["https://app.example/cb/", "https://evil.example/cb", "http://127.0.0.1:8080/other"] {
            do {
                _ = try await fixture.start(redirectURI: uri)
                Issue.record("\(uri) was admitted")
            } catch let error as VaultError {
                #expect(error.code == .redirectURINotAllowed)
            }
        }
        _ = try await fixture.start(redirectURI: "http://127.0.0.1:49152/done")
    }

    @Test func eachCallerHasAtMostTheLimitWaitingAndExpiredOnesAreNotCounted() async throws {
        let fixture = try Fixture(limits: SignInLimits(expirySeconds: 60, maximumPendingPerUID: 2))
        _ = try await fixture.start()
        _ = try await fixture.start()
        do {
            _ = try await fixture.start()
            Issue.record("a third sign-in was started")
        } catch let error as VaultError {
            #expect(error.code == .tooManyAuthorizations)
        }
        _ = try await fixture.start(uid: 1001)
        fixture.testVault.clock.advance(seconds: 61)
        _ = try await fixture.start()
    }

    @Test func aServerWithPushedRequestsGetsTheParametersAndTheURLOnlyTheirReference() async throws {
        let fixture = try Fixture(par: true)
        let started = try await fixture.start()
        #expect(started.pushed)
        let query = try Self.query(try #require(started.authorizationURL))
        #expect(query == ["client_id": "client-1", "request_uri": "urn:ietf:params:oauth:request_uri:abc"])
        let pushed = try #require(fixture.server.state.withLock { $0.pushed.first })
        let names = Set(pushed.map(\.name))
        #expect(names.isSuperset(of: ["state", "code_challenge", "nonce", "redirect_uri", "scope"]))
        // The sign-in's lifetime, not the pushed request's (that bounds only the browser's arrival).
        #expect(started.expiresAt == fixture.testVault.clock.now.adding(seconds: 600))
        let state = try #require(pushed.first { $0.name == "state" }?.value)
        fixture.server.state.withLock { $0.idTokenNonce = pushed.first { $0.name == "nonce" }?.value }
        _ = try await fixture.finish([("code", "c"), ("state", state)])
    }

    @Test func theParametersModeAnswersWhatAnSDKNeedsAndTheCodeIsFinishedTheSameWay() async throws {
        let fixture = try Fixture(par: true)
        let started = try await fixture.start(mode: .parameters)
        #expect(started.authorizationURL == nil && !started.pushed)
        let parameters = Dictionary(try #require(started.parameters).map { ($0.name, $0.value) }) { first, _ in first }
        #expect(parameters["code_challenge_method"] == "S256" && parameters["state"] != nil)
        #expect(fixture.server.state.withLock { $0.pushed.isEmpty })
        fixture.server.state.withLock { $0.idTokenNonce = parameters["nonce"] }
        _ = try await fixture.finish([("code", "from-the-app"), ("state", parameters["state"] ?? "")])
        #expect(fixture.server.state.withLock { $0.exchanges.first?.code } == "from-the-app")
    }

    /// A credential that needs a new sign-in is repaired in place: same id, labels kept, the
    /// generation continued, active again.
    @Test func aSignInRepairsTheCredentialItWasStartedFor() async throws {
        let fixture = try Fixture()
        let id = try CredentialID("ns/person")
        _ = try await fixture.vault.put(
            id,
            payload: TokenPayload(
                kind: .oauth2,
                secrets: CredentialSecrets(
                    accessToken: SecretBytes(utf8: "old"), refreshToken: SecretBytes(utf8: "old-rt")),
                tokenType: "Bearer", expiry: .after(seconds: 60)),
            provider: fixture.server.name, labels: ["owner": "billing"])
        // The server refuses the refresh token: the credential needs a new sign-in.
        _ = try await fixture.engine.refresh(id, reason: .forced)
        let broken = try await fixture.vault.metadata(id)
        #expect(broken.status == CredentialStatus.needsReauth && broken.generation == 1)

        let started = try await fixture.start()
        fixture.server.state.withLock { $0.idTokenNonce = try? Self.query(started.authorizationURL ?? "")["nonce"] }
        _ = try await fixture.finish(try Self.callback(started))
        let repaired = try await fixture.vault.metadata(id)
        #expect(
            repaired.status == CredentialStatus.active && repaired.generation == 2
                && repaired.labels == ["owner": "billing"])
        let listed = try await fixture.vault.list(CredentialQuery(namespace: "ns"))
        #expect(listed.count == 1)
        #expect(repaired.scopes == ["openid", "profile"], "the scopes asked for, the answer naming none")

        // A caller that may not replace the account repairs only with the same one.
        let other = try await fixture.start()
        fixture.server.state.withLock { state in
            state.idTokenNonce = try? Self.query(other.authorizationURL ?? "")["nonce"]
            state.subject = "someone-else"
        }
        do {
            _ = try await fixture.finish(try Self.callback(other), keepsSubject: true)
            Issue.record("another account replaced the credential's")
        } catch let error as VaultError {
            #expect(error.code == .authorizationMismatch)
        }
        #expect(try await fixture.vault.metadata(id).generation == 2)

        // Nor a credential stored without a subject: there is nothing to compare with.
        let bare = try CredentialID("ns/bare")
        _ = try await fixture.vault.put(
            bare,
            payload: TokenPayload(
                kind: .oauth2, secrets: CredentialSecrets(accessToken: SecretBytes(utf8: "x")), tokenType: "Bearer",
                expiry: .after(seconds: 60)),
            provider: fixture.server.name)
        let third = try await fixture.start("ns/bare")
        fixture.server.state.withLock { $0.idTokenNonce = try? Self.query(third.authorizationURL ?? "")["nonce"] }
        do {
            _ = try await fixture.finish(try Self.callback(third), id: "ns/bare", keepsSubject: true)
            Issue.record("a credential without a subject was replaced by an authorize-only caller")
        } catch let error as VaultError {
            #expect(error.code == .authorizationMismatch)
        }
    }

    @Test func aProviderOfAKindThatCannotSignInSaysSo() async throws {
        let testVault = try TestVault()
        let scripted = ScriptedProvider()
        let engine = RefreshEngine(
            vault: testVault.vault, providers: [scripted.name: scripted],
            settings: [scripted.name: ProviderSettings(name: scripted.name, kind: "oauth2")],
            logger: CapturedLogs().logger)
        do {
            _ = try await engine.startSignIn(
                SignInStart(
                    credentialID: try CredentialID("ns/a"), provider: scripted.name,
                    redirectURI: "https://app.example/cb", scopes: [],
                    audit: AuditEvent(
                        at: testVault.clock.now, uid: 1000, operation: .credentialAuthorize, outcome: .allowed)))
            Issue.record("started")
        } catch let failure as ProviderFailure {
            #expect(failure.code == .providerNotConfigured)
        }
    }
}

/// A sign-in's exchange as the courier's spool keeps it: everything a recovered answer needs to be
/// stored as the finish would have stored it (issuer, labels left to the credential, the scopes
/// asked for, the subject a repair must keep, the audit row's operation), and no secret.
@Suite struct SpooledSignInTests {
    @Test func aSpooledSignInIsStoredAsItsFinishWouldHaveStoredIt() throws {
        let id = try CredentialID("ns/person")
        let redemption = CodeRedemption(
            provider: "signin",
            request: CodeExchangeRequest(
                code: SecretBytes(utf8: "the-code"), codeVerifier: SecretBytes(utf8: "the-verifier"),
                redirectURI: "https://app.example/cb", credentialID: id),
            nonce: "n-1", issuer: "https://as.example", idTokenRequired: false, requestedScopes: ["read"],
            expectedSubject: "person-1", labels: nil,
            audit: AuditEvent(
                at: Timestamp(milliseconds: 1_000), uid: 1000, gid: 1000, pid: 7, operation: .credentialAuthorized,
                credentialID: id, outcome: .allowed))
        let context = try SpooledExchange(redemption).encoded()
        let text = context.revealString()
        #expect(!text.contains("the-code") && !text.contains("the-verifier"))
        let recovered = try SpooledExchange.decode(context).redemption()
        #expect(recovered.issuer == "https://as.example" && recovered.nonce == "n-1" && !recovered.idTokenRequired)
        #expect(recovered.requestedScopes == ["read"] && recovered.expectedSubject == "person-1")
        #expect(recovered.labels == nil && recovered.audit.operation == AuditOperation.credentialAuthorized.name)
        #expect(recovered.audit.uid == 1000 && recovered.request.redirectURI == "https://app.example/cb")
    }

    /// A context spooled by the previous version (no sign-in fields) still reads, as an exchange.
    @Test func aContextFromBeforeSignInsStillReads() throws {
        let old =
            #"{"credentialID":"ns/a","provider":"p","redirectURI":"https://app.example/cb","labels":{"k":"v"},"auditAt":5}"#
        let recovered = try SpooledExchange.decode(SecretBytes(utf8: old)).redemption()
        #expect(recovered.labels == ["k": "v"] && recovered.idTokenRequired && recovered.issuer == nil)
        #expect(recovered.audit.operation == AuditOperation.credentialExchange.name)
    }
}
