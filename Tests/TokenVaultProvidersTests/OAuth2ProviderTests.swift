import Foundation
import Testing
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

/// `OAuth2Provider` against the real loopback `TestOAuthServer`: what goes on the wire, what
/// comes back, and how every way a provider can fail is classified.
@Suite struct OAuth2ProviderTests {
    typealias Fixture = OAuth2ProviderFixture

    /// `Basic base64(id:secret)` decoded, form-decoding left to the caller.
    func basicPair(_ header: String?) -> String? {
        guard let header, header.hasPrefix("Basic "),
            let data = Data(base64Encoded: String(header.dropFirst("Basic ".count)))
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    // MARK: Request shape

    @Test func refreshWithBasicAuthentication() async throws {
        try await Fixture.run { fixture in
            let issued = fixture.server.issue(scopes: ["openid", "profile"])
            let payload = try await fixture.provider.refresh(
                Fixture.refreshRequest(issued.refreshToken, scopes: ["openid"]))

            let request = try #require(fixture.server.requests.last)
            #expect(request.method == "POST")
            #expect(request.path == "/token")
            #expect(request.uri == "/token", "nothing in the query string")
            #expect(request.headers["content-type"] == "application/x-www-form-urlencoded")
            #expect(request.headers["accept"] == "application/json")
            #expect(basicPair(request.headers["authorization"]) == "vault-client:vault-secret")
            #expect(request.form == ["grant_type": "refresh_token", "refresh_token": issued.refreshToken])
            #expect(request.formFields.map(\.name) == ["grant_type", "refresh_token"])

            let access = payload.secrets.accessToken.revealString()
            let successor = try #require(payload.secrets.refreshToken?.revealString())
            #expect(fixture.server.accessTokenState(access) != .unknown)
            #expect(access != issued.accessToken)
            #expect(successor != issued.refreshToken, "the provider rotated the refresh token")
            #expect(fixture.server.isSpent(issued.refreshToken))
            #expect(payload.expiry == .after(seconds: 3600))
            #expect(payload.tokenType == "Bearer")
            #expect(payload.scopes == ["openid", "profile"])
            #expect(fixture.server.successfulRefreshes == 1)
        }
    }

    @Test func rotatedTokenRefreshesAgain() async throws {
        try await Fixture.run { fixture in
            let issued = fixture.server.issue()
            let first = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
            let successor = try #require(first.secrets.refreshToken?.revealString())
            let second = try await fixture.provider.refresh(Fixture.refreshRequest(successor))
            #expect(second.secrets.refreshToken?.revealString() != successor)
            #expect(fixture.server.refreshTokensPresentedTwice.isEmpty)
            #expect(fixture.server.successfulRefreshes == 2)
        }
    }

    @Test func clientSecretPost() async throws {
        try await Fixture.run(server: { $0.clientAuthentication = .post }) { fixture in
            let issued = fixture.server.issue()
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
            let request = try #require(fixture.server.requests.last)
            #expect(request.headers["authorization"] == nil)
            #expect(
                request.form == [
                    "grant_type": "refresh_token", "refresh_token": issued.refreshToken, "client_id": "vault-client",
                    "client_secret": "vault-secret",
                ])
        }
    }

    @Test func publicClientSendsItsIDInTheForm() async throws {
        try await Fixture.run(server: {
            $0.clientAuthentication = .none
            $0.clientSecret = nil
        }) { fixture in
            #expect(fixture.provider.configuration.clientAuthentication == .none)
            let issued = fixture.server.issue()
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
            let request = try #require(fixture.server.requests.last)
            #expect(request.headers["authorization"] == nil)
            #expect(request.form["client_id"] == "vault-client")
            #expect(request.form["client_secret"] == nil)
        }
    }

    @Test func publicClientWithBasicSendsAnEmptyPassword() async throws {
        try await Fixture.run(server: { $0.clientSecret = nil }) { fixture in
            let issued = fixture.server.issue()
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
            #expect(basicPair(fixture.server.requests.last?.headers["authorization"]) == "vault-client:")
        }
    }

    @Test func basicCredentialsAreFormEncodedFirst() async throws {
        try await Fixture.run(server: {
            $0.clientID = "app id:1"
            $0.clientSecret = "s3c:r/e t+%é"
        }) { fixture in
            let issued = fixture.server.issue()
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
            #expect(
                basicPair(fixture.server.requests.last?.headers["authorization"])
                    == "app+id%3A1:s3c%3Ar%2Fe+t%2B%25%C3%A9")
        }
    }

    @Test func scopeIsSentOnlyWhenConfigured() async throws {
        try await Fixture.run(options: { _, _ in ["send_scope": true] }) { fixture in
            let issued = fixture.server.issue(scopes: ["a", "b"])
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken, scopes: ["a", "b"]))
            #expect(fixture.server.requests.last?.form["scope"] == "a b")
        }
        try await Fixture.run { fixture in
            let issued = fixture.server.issue(scopes: ["a", "b"])
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken, scopes: ["a", "b"]))
            #expect(fixture.server.requests.last?.form["scope"] == nil)
        }
    }

    @Test func configuredHeadersAreSent() async throws {
        try await Fixture.run(
            server: { $0.requiredHeaders = ["X-SSO-No-Adapter": "true"] },
            options: { _, _ in ["headers": ["X-SSO-No-Adapter": "true"]] }
        ) { fixture in
            let issued = fixture.server.issue()
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
            #expect(fixture.server.requests.last?.headers["x-sso-no-adapter"] == "true")
        }
        try await Fixture.run(server: { $0.requiredHeaders = ["X-SSO-No-Adapter": "true"] }) { fixture in
            let failure = await fixture.refreshFailure(fixture.server.issue().refreshToken)
            #expect(failure?.kind == .misconfigured)
            #expect(failure?.code == "invalid_request")
        }
    }

    // MARK: Responses

    @Test(arguments: [
        (ExpiresInFormat.integer, 3600.0, TokenPayload.Expiry.after(seconds: 3600)),
        (.string, 3600, .after(seconds: 3600)), (.float, 1799.5, .after(seconds: 1799)), (.absent, 3600, .unknown),
        (.zero, 3600, .unknown),
    ])
    func expiresInFormats(format: ExpiresInFormat, lifetime: Double, expected: TokenPayload.Expiry) async throws {
        try await Fixture.run(server: {
            $0.expiresInFormat = format
            $0.accessTokenLifetime = lifetime
        }) { fixture in
            let payload = try await fixture.provider.refresh(
                Fixture.refreshRequest(fixture.server.issue().refreshToken))
            #expect(payload.expiry == expected)
        }
    }

    @Test func scopeAsAnArray() async throws {
        try await Fixture.run(server: { $0.scopeFormat = .array }) { fixture in
            let issued = fixture.server.issue(scopes: ["openid", "email"])
            let payload = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
            #expect(payload.scopes == ["openid", "email"])
        }
    }

    @Test(arguments: [true, false])
    func nonRotatingProvider(omit: Bool) async throws {
        try await Fixture.run(server: {
            $0.rotateRefreshTokens = false
            $0.omitRefreshTokenInResponse = omit
        }) { fixture in
            let issued = fixture.server.issue()
            let payload = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
            // Absent means "keep the old one": the engine decides, the provider reports.
            #expect(payload.secrets.refreshToken?.revealString() == (omit ? nil : issued.refreshToken))
        }
    }

    @Test func idTokenSubjectIsRead() async throws {
        try await Fixture.run(server: { $0.includeIDToken = true }) { fixture in
            let issued = fixture.server.issue()
            let payload = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
            #expect(payload.secrets.idToken != nil)
            #expect(payload.subject == issued.subject)
        }
    }

    // MARK: Error classes

    @Test func spentTokenIsInvalidGrant() async throws {
        try await Fixture.run { fixture in
            let issued = fixture.server.issue()
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
            let failure = try #require(await fixture.refreshFailure(issued.refreshToken))
            #expect(failure.kind == .invalidGrant)
            #expect(failure.code == "invalid_grant")
            #expect(failure.httpStatus == 400)
            #expect(!failure.message.contains(issued.refreshToken))
        }
    }

    @Test func wrongClientSecretIsMisconfigured() async throws {
        try await Fixture.run(options: { _, directory in
            let path = directory.file("wrong.secret")
            ProviderTestSupport.write("not-the-secret", to: path, mode: 0o600)
            return ["client_secret_file": .string(path)]
        }) { fixture in
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == .misconfigured)
            #expect(failure.code == "invalid_client")
            #expect(failure.httpStatus == 401)
            #expect(!failure.message.contains("not-the-secret"))
        }
    }

    @Test(arguments: [
        (400, "invalid_grant", ProviderFailure.Kind.invalidGrant), (401, "invalid_client", .misconfigured),
        (400, "unauthorized_client", .misconfigured), (400, "unsupported_grant_type", .misconfigured),
        (400, "invalid_request", .misconfigured), (400, "invalid_scope", .misconfigured),
        (500, "server_error", .transient), (503, "temporarily_unavailable", .transient),
    ])
    func scriptedErrorClasses(status: Int, code: String, kind: ProviderFailure.Kind) async throws {
        try await Fixture.run { fixture in
            fixture.server.script(.error(status: status, code: code))
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == kind)
            #expect(failure.code.rawValue == code)
            #expect(failure.httpStatus == status)
        }
    }

    @Test(arguments: [ErrorShape.rfc6749, .tinkoff, .sberGateway, .esia])
    func invalidGrantInEveryShape(shape: ErrorShape) async throws {
        try await Fixture.run(server: { $0.errorShape = shape }) { fixture in
            fixture.server.script(.error(status: 400, code: "invalid_grant", description: "grant is gone"))
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == .invalidGrant, "\(shape): \(failure)")
        }
    }

    @Test func tinkoffLimitExceededBacksOffLong() async throws {
        try await Fixture.run(server: { $0.errorShape = .tinkoff }) { fixture in
            fixture.server.script(.error(status: 429, code: "limit_exceeded", description: "too many", retryAfter: "5"))
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == .transient)
            #expect(failure.code == "limit_exceeded")
            #expect(failure.retryAfter == 900)
            #expect(failure.message == "too many")
        }
    }

    @Test func serviceUnavailableWithRetryAfter() async throws {
        try await Fixture.run { fixture in
            let inTwoMinutes = Date().addingTimeInterval(120)
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            fixture.server.script(
                .error(status: 503, code: "temporarily_unavailable", retryAfter: "120"),
                .error(status: 503, code: "temporarily_unavailable", retryAfter: formatter.string(from: inTwoMinutes)))
            let issued = fixture.server.issue()
            let seconds = try #require(await fixture.refreshFailure(issued.refreshToken))
            #expect(seconds.kind == .transient)
            #expect(seconds.retryAfter == 120)
            let date = try #require(await fixture.refreshFailure(issued.refreshToken))
            #expect(date.kind == .transient)
            // Two minutes from when the date was written, less what the test has taken since (a loaded
            // machine took 19 s), to the second the date is written in.
            let elapsed = Date().timeIntervalSince(inTwoMinutes) + 120
            #expect((120 - elapsed - 2...121).contains(date.retryAfter ?? -1), "\(elapsed)")
            // The scripted refusals spent nothing: the token still works.
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
        }
    }

    @Test func htmlErrorPageIsTransientByStatus() async throws {
        try await Fixture.run { fixture in
            fixture.server.script(.htmlError(status: 502), .htmlError(status: 401))
            let issued = fixture.server.issue()
            let gateway = try #require(await fixture.refreshFailure(issued.refreshToken))
            #expect(gateway.kind == .transient)
            #expect(gateway.code == "http_502")
            let unauthorised = try #require(await fixture.refreshFailure(issued.refreshToken))
            #expect(unauthorised.kind == .misconfigured)
            #expect(unauthorised.code == "http_401")
        }
    }

    @Test func errorDescriptionEchoingTheTokenIsRedacted() async throws {
        try await Fixture.run { fixture in
            let issued = fixture.server.issue()
            fixture.server.script(
                .error(
                    status: 400, code: "invalid_grant", description: "refresh_token=\(issued.refreshToken) vault-secret"
                ))
            let failure = try #require(await fixture.refreshFailure(issued.refreshToken))
            #expect(failure.kind == .invalidGrant)
            #expect(!failure.description.contains(issued.refreshToken))
            #expect(!failure.description.contains("vault-secret"))
        }
    }

    @Test func redirectIsNotFollowed() async throws {
        try await Fixture.run { fixture in
            fixture.server.script(
                .raw(status: 307, headers: ["Location": fixture.server.baseURL + "/elsewhere"], body: ""))
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == .misconfigured)
            #expect(failure.code == "http_307")
            #expect(fixture.server.requests.count == 1, "the refresh token went nowhere else")
        }
    }

    @Test func errorInATwoHundredBodyIsClassified() async throws {
        try await Fixture.run { fixture in
            fixture.server.script(
                .raw(
                    status: 200, headers: ["Content-Type": "application/json"],
                    body: #"{"error":"invalid_grant","error_description":"expired"}"#))
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == .invalidGrant)
            #expect(failure.httpStatus == 200)
        }
    }

    // MARK: Unknown outcomes and transport

    @Test func timeoutShorterThanTheAnswerIsUnknownOutcome() async throws {
        try await Fixture.run(options: { _, _ in ["timeout_seconds": 0.3] }) { fixture in
            // The answer comes 120 s late; the timeout is 0.3 s. Giving up before 30 s shows the
            // timeout acted, with room for a loaded machine (the suite runs in parallel; a busy CI
            // machine once took 3.8 s).
            fixture.server.script(.delay(seconds: 120))
            let issued = fixture.server.issue()
            let started = ContinuousClock.now
            let failure = try #require(await fixture.refreshFailure(issued.refreshToken))
            let elapsed = ContinuousClock.now - started
            #expect(failure.kind == .unknownOutcome)
            #expect(failure.code == "timeout")
            #expect(failure.httpStatus == nil)
            #expect(elapsed < .seconds(30), "gave up after the timeout, not after the answer")
        }
    }

    @Test func rotateThenDropIsUnknownOutcome() async throws {
        try await Fixture.run(server: { $0.graceWindow = 60 }) { fixture in
            fixture.server.script(.rotateThenDrop)
            let issued = fixture.server.issue()
            let failure = try #require(await fixture.refreshFailure(issued.refreshToken))
            #expect(failure.kind == .unknownOutcome)
            #expect(failure.code == "connection_dropped")
            #expect(fixture.server.isSpent(issued.refreshToken), "the provider did rotate")
            // What the engine then does: retry with the same token, accepted in the grace window.
            let retried = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
            #expect(retried.secrets.refreshToken != nil)
        }
    }

    @Test(arguments: [true, false])
    func malformedJSONIsUnknownOutcome(rotating: Bool) async throws {
        try await Fixture.run { fixture in
            fixture.server.script(.malformedJSON(rotating: rotating))
            let issued = fixture.server.issue()
            let failure = try #require(await fixture.refreshFailure(issued.refreshToken))
            #expect(failure.kind == .unknownOutcome)
            #expect(failure.code == "malformed_response")
            #expect(failure.httpStatus == 200)
            #expect(fixture.server.isSpent(issued.refreshToken) == rotating)
        }
    }

    @Test func compactJWTBodyIsUnknownOutcome() async throws {
        try await Fixture.run { fixture in
            fixture.server.script(.compactJWTBody)
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == .unknownOutcome)
            #expect(failure.code == "malformed_response")
            #expect(failure.message.contains("JWT"))
            #expect(!failure.message.contains("eyJ"))
        }
    }

    /// With `keep_alive_seconds: 0` every call has a connection of its own, so a refused connect
    /// is the only way it can fail unsent.
    @Test func serverOfflineIsTransientAndFast() async throws {
        try await Fixture.run(options: { _, _ in ["keep_alive_seconds": 0] }) { fixture in
            let issued = fixture.server.issue()
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
            #expect(fixture.server.requests.last?.headers["connection"] == "close")
            await fixture.server.goOffline()
            let token = fixture.server.issue().refreshToken
            let started = ContinuousClock.now
            let failure = try #require(await fixture.refreshFailure(token))
            #expect(failure.kind == .transient, "\(failure)")
            #expect(failure.code == "connection_failed")
            // Refused at once: under the 5 s connect timeout, with room for a loaded machine.
            #expect(ContinuousClock.now - started < .seconds(4))

            try await fixture.server.comeBack()
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(token))
        }
    }

    /// Calls share a kept connection (one TCP and TLS handshake for many refreshes) while it is
    /// used within `keep_alive_seconds` (long here: a loaded CI machine took more than half a
    /// second between two calls).
    @Test func callsShareAKeptConnection() async throws {
        try await Fixture.run(options: { _, _ in ["keep_alive_seconds": 30] }) { fixture in
            var token = fixture.server.issue().refreshToken
            for _ in 0..<3 {
                let payload = try await fixture.provider.refresh(Fixture.refreshRequest(token))
                token = try #require(payload.secrets.refreshToken?.revealString())
            }
            #expect(fixture.server.acceptedConnections == 1)
            #expect(fixture.server.requests.last?.headers["connection"] == nil)
            #expect(fixture.server.refreshTokensPresentedTwice.isEmpty)
        }
    }

    /// A connection idle for longer than `keep_alive_seconds` is closed by the vault, not reused.
    @Test func aConnectionIdleForLongerThanKeepAliveIsNotReused() async throws {
        try await Fixture.run(options: { _, _ in ["keep_alive_seconds": 0.3] }) { fixture in
            let first = try await fixture.provider.refresh(Fixture.refreshRequest(fixture.server.issue().refreshToken))
            #expect(first.secrets.refreshToken != nil)
            try await Task.sleep(for: .milliseconds(1500))
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(fixture.server.issue().refreshToken))
            #expect(fixture.server.acceptedConnections == 2)
        }
    }

    /// A kept connection the provider closes is not used again: the next call connects anew and
    /// succeeds (the provider restarting between refreshes, or its idle limit).
    @Test func aKeptConnectionTheProviderClosedIsReplaced() async throws {
        try await Fixture.run { fixture in
            let issued = fixture.server.issue()
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
            await fixture.server.goOffline()
            try await fixture.server.comeBack()
            // Time for the client to see the close (a loaded machine may take more than 100 ms).
            try await Task.sleep(for: .milliseconds(500))
            let token = fixture.server.issue().refreshToken
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(token))
            #expect(fixture.server.acceptedConnections == 2)
        }
    }

    @Test func nothingListeningIsTransient() async throws {
        let server = try await TestOAuthServer.start()
        let url = server.tokenURL
        await server.shutdown()
        let provider = try OAuth2Provider(
            settings: ProviderTestSupport.settings(["token_endpoint": .string(url), "client_id": "vault-client"]),
            environment: [:])
        let failure: ProviderFailure?
        do {
            _ = try await provider.refresh(OAuth2ProviderFixture.refreshRequest("rt-never-sent"))
            failure = nil
        } catch {
            failure = error
        }
        try await provider.shutdown()
        #expect(failure?.kind == .transient)
        #expect(failure?.code == "connection_failed")
        #expect(failure?.message.contains("rt-never-sent") == false)
    }

    // MARK: Revocation

    @Test(arguments: [RevocationAnswer.emptyJSON, .plainOK, .empty])
    func revocationSucceedsWhateverTheBody(answer: RevocationAnswer) async throws {
        try await Fixture.run(server: { $0.revocationAnswer = answer }) { fixture in
            #expect(fixture.provider.supportsRevocation)
            let issued = fixture.server.issue()
            try await fixture.provider.revoke(SecretBytes(utf8: issued.refreshToken), hint: .refreshToken, call: nil)
            let request = try #require(fixture.server.requests.last)
            #expect(request.method == "POST")
            #expect(request.path == "/revoke")
            #expect(request.form == ["token": issued.refreshToken, "token_type_hint": "refresh_token"])
            #expect(basicPair(request.headers["authorization"]) == "vault-client:vault-secret")
            #expect(fixture.server.refreshTokenState(issued.refreshToken) == .revoked)
        }
    }

    @Test func revokingAnAccessToken() async throws {
        try await Fixture.run { fixture in
            let issued = fixture.server.issue()
            try await fixture.provider.revoke(SecretBytes(utf8: issued.accessToken), hint: .accessToken, call: nil)
            #expect(fixture.server.requests.last?.form["token_type_hint"] == "access_token")
            #expect(fixture.server.accessTokenState(issued.accessToken) == .revoked)
        }
    }

    @Test func revocationOutageIsTransientWithRetryAfter() async throws {
        try await Fixture.run { fixture in
            fixture.server.scriptRevocation(.error(status: 503, code: "temporarily_unavailable", retryAfter: "30"))
            let issued = fixture.server.issue()
            let failure = try #require(await fixture.revokeFailure(issued.refreshToken))
            #expect(failure.kind == .transient)
            #expect(failure.retryAfter == 30)
            #expect(fixture.server.refreshTokenState(issued.refreshToken) != .revoked)
            #expect(await fixture.revokeFailure(issued.refreshToken) == nil)
        }
    }

    @Test func withoutARevocationEndpointNothingIsSent() async throws {
        try await Fixture.run(options: { _, _ in ["revocation_endpoint": .null] }) { fixture in
            #expect(!fixture.provider.supportsRevocation)
            let failure = await fixture.revokeFailure(fixture.server.issue().refreshToken)
            #expect(failure?.code == "revocation_not_supported")
            #expect(fixture.server.revocationRequestCount == 0)
        }
    }

    // MARK: Discovery

    @Test(arguments: ["/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"])
    func discoveryIsFetchedOnceAndUsed(path: String) async throws {
        try await Fixture.run(options: { server, _ in
            ["token_endpoint": .null, "revocation_endpoint": .null, "discovery_url": .string(server.baseURL + path)]
        }) { fixture in
            #expect(fixture.server.requests.isEmpty, "discovery is lazy")
            #expect(fixture.provider.supportsRevocation)
            let issued = fixture.server.issue()
            let first = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(first.secrets.refreshToken!.revealString()))
            try await fixture.provider.revoke(first.secrets.accessToken, hint: .accessToken, call: nil)
            let requests = fixture.server.requests
            #expect(requests.map(\.path) == [path, "/token", "/token", "/revoke"])
            #expect(requests.first?.method == "GET")
            #expect(requests.first?.headers["authorization"] == nil, "discovery sends no credentials")
            let discovered = try await fixture.provider.discover()
            #expect(discovered.tokenEndpoint == fixture.server.tokenURL)
            #expect(discovered.revocationEndpoint == fixture.server.revocationURL)
        }
    }

    /// RFC 8414 section 3.3 and OpenID Connect Discovery section 4.3: the issuer a document must
    /// name is the one its URL was made from.
    @Test func theIssuerADiscoveryURLWasMadeFrom() {
        #expect(
            OAuth2Wire.issuer(ofDiscoveryURL: "https://id.example/.well-known/openid-configuration")
                == "https://id.example")
        #expect(
            OAuth2Wire.issuer(ofDiscoveryURL: "https://id.example/tenant/.well-known/openid-configuration")
                == "https://id.example/tenant")
        #expect(
            OAuth2Wire.issuer(ofDiscoveryURL: "https://id.example/.well-known/oauth-authorization-server/tenant")
                == "https://id.example/tenant")
        #expect(OAuth2Wire.issuer(ofDiscoveryURL: "https://id.example/meta.json") == nil)
    }

    /// A configured issuer the document does not name fails discovery; a discovered server
    /// without an authorization endpoint refreshes but starts no sign-in.
    @Test func signInsNeedTheIssuerAndAnAuthorizationEndpoint() async throws {
        try await Fixture.run(options: { server, _ in
            [
                "token_endpoint": .null, "revocation_endpoint": .null, "issuer": "https://other.example",
                "discovery_url": .string(server.baseURL + "/.well-known/openid-configuration"),
                "redirect_uris": .array([.string("https://app.example/cb")]),
            ]
        }) { fixture in
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.code == .discoveryFailed && failure.message.contains("https://other.example"), "\(failure)")
        }
        try await Fixture.run(options: { server, _ in
            [
                "token_endpoint": .null, "revocation_endpoint": .null,
                "discovery_url": .string(server.baseURL + "/.well-known/openid-configuration"),
                "redirect_uris": .array([.string("https://app.example/cb")]),
            ]
        }) { fixture in
            do {
                _ = try await fixture.provider.authorizationServer()
                Issue.record("a server without an authorization endpoint starts sign-ins")
            } catch let failure as ProviderFailure {
                #expect(failure.code == .providerNotConfigured && failure.message.contains("authorization_endpoint"))
            }
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(fixture.server.issue().refreshToken))
        }
    }

    /// RFC 8414 section 3.1 inserts its suffix between the host and the issuer's path; OpenID
    /// Connect Discovery appends its own; a terminating `/` is removed first.
    @Test func theMetadataURLsOfAnIssuer() {
        #expect(
            OAuth2Wire.metadataURLs(ofIssuer: "https://id.example") == [
                "https://id.example/.well-known/oauth-authorization-server",
                "https://id.example/.well-known/openid-configuration",
            ])
        #expect(
            OAuth2Wire.metadataURLs(ofIssuer: "https://id.example:8443/tenant/1/") == [
                "https://id.example:8443/.well-known/oauth-authorization-server/tenant/1",
                "https://id.example:8443/tenant/1/.well-known/openid-configuration",
            ])
    }

    /// An instance given only its `issuer` reads RFC 8414's document, or OpenID Connect's where
    /// the server has only that one, and takes every endpoint from it.
    @Test(arguments: [false, true])
    func anIssuerAloneFindsTheEndpoints(onlyOpenID: Bool) async throws {
        try await Fixture.run(
            server: { options in
                if onlyOpenID { options.discoveryPaths = ["/.well-known/openid-configuration"] }
            },
            options: { server, _ in
                ["token_endpoint": .null, "revocation_endpoint": .null, "issuer": .string(server.baseURL)]
            }
        ) { fixture in
            let issued = fixture.server.issue()
            _ = try await fixture.provider.refresh(Fixture.refreshRequest(issued.refreshToken))
            let paths = fixture.server.requests.map(\.path)
            let expected =
                onlyOpenID
                ? ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration", "/token"]
                : ["/.well-known/oauth-authorization-server", "/token"]
            #expect(paths == expected)
            let discovered = try await fixture.provider.discover()
            #expect(discovered.tokenEndpoint == fixture.server.tokenURL)
            #expect(discovered.revocationEndpoint == fixture.server.revocationURL)
        }
        // The document must name exactly the configured issuer (a trailing `/` is another one).
        try await Fixture.run(options: { server, _ in
            ["token_endpoint": .null, "revocation_endpoint": .null, "issuer": .string(server.baseURL + "/")]
        }) { fixture in
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.code == .discoveryFailed && failure.message.contains("issuer"), "\(failure)")
            #expect(fixture.server.tokenRequestCount == 0)
        }
    }

    /// A server that answers RFC 8414's URL as busy or down is not asked for OpenID Connect's:
    /// the failure is the passing one, and the instance is not taken for misconfigured.
    @Test func aBusyMetadataServerIsNotAskedForTheNextDocument() async throws {
        try await Fixture.run(
            server: { options in
                options.discoveryPaths = ["/.well-known/openid-configuration"]
                options.unavailablePaths = ["/.well-known/oauth-authorization-server"]
            },
            options: { server, _ in
                ["token_endpoint": .null, "revocation_endpoint": .null, "issuer": .string(server.baseURL)]
            }
        ) { fixture in
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == .transient && failure.httpStatus == 503, "\(failure)")
            #expect(fixture.server.requests.map(\.path) == ["/.well-known/oauth-authorization-server"])
        }
    }

    @Test func concurrentFirstCallsShareOneDiscovery() async throws {
        try await Fixture.run(options: { server, _ in
            [
                "token_endpoint": .null, "revocation_endpoint": .null,
                "discovery_url": .string(server.baseURL + "/.well-known/openid-configuration"),
            ]
        }) { fixture in
            let tokens = (0..<4).map { _ in fixture.server.issue().refreshToken }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for token in tokens {
                    group.addTask { _ = try await fixture.provider.refresh(Fixture.refreshRequest(token)) }
                }
                try await group.waitForAll()
            }
            let paths = fixture.server.requests.map(\.path)
            #expect(paths.filter { $0 == "/.well-known/openid-configuration" }.count == 1)
            #expect(paths.filter { $0 == "/token" }.count == 4)
        }
    }

    @Test func brokenDiscoveryIsReportedAndRetried() async throws {
        try await Fixture.run(options: { server, _ in
            [
                "token_endpoint": .null, "revocation_endpoint": .null,
                "discovery_url": .string(server.baseURL + "/no/such/document"),
            ]
        }) { fixture in
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == .misconfigured)
            #expect(failure.httpStatus == 404)
            #expect(failure.message.contains("discovery"))
            _ = await fixture.refreshFailure("rt-again")
            #expect(fixture.server.requests.filter { $0.path == "/no/such/document" }.count == 2)
            #expect(fixture.server.tokenRequestCount == 0)
        }
    }
}
