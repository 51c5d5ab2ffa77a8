import Foundation
import Testing
import TokenVaultCore
import TokenVaultTesting

/// The loopback OAuth test provider does what its documentation claims: other tests trust its
/// counters and token states to judge the refresh engine and the OAuth clients.
@Suite struct TestOAuthServerTests {
    static let client = (user: "vault-client", password: "vault-secret")

    func refresh(
        _ server: TestOAuthServer, _ refreshToken: String, extra: [String: String] = [:], timeout: Double = 10
    ) async throws -> TestHTTPResponse {
        try await TestHTTPClient.postForm(
            server.tokenURL, ["grant_type": "refresh_token", "refresh_token": refreshToken].merging(extra) { $1 },
            basicAuth: Self.client, timeout: timeout)
    }

    func revoke(_ server: TestOAuthServer, _ token: String, hint: String) async throws -> TestHTTPResponse {
        try await TestHTTPClient.postForm(
            server.revocationURL, ["token": token, "token_type_hint": hint], basicAuth: Self.client)
    }

    /// The claims of a compact JWT, unverified.
    func claims(_ jwt: String) -> [String: Any] {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return [:] }
        var text = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: text) else { return [:] }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }

    // MARK: Refresh

    @Test func rotationSpendsTheOldTokenAndMintsANewPair() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue(scopes: ["openid", "profile"])
            #expect(issued.accessToken.hasPrefix("at-") && issued.refreshToken.hasPrefix("rt-"))
            #expect(issued.accessToken.count >= 40 && issued.refreshToken.count >= 40, "unguessable")

            let response = try await refresh(server, issued.refreshToken)
            #expect(response.status == 200)
            #expect(response.headers["content-type"] == "application/json")
            #expect(response.headers["content-length"] == String(response.body.count))
            let json = try #require(response.json)
            let access = try #require(json["access_token"] as? String)
            let refresh = try #require(json["refresh_token"] as? String)
            #expect(access.hasPrefix("at-") && access != issued.accessToken)
            #expect(refresh.hasPrefix("rt-") && refresh != issued.refreshToken)
            #expect(json["token_type"] as? String == "Bearer")
            #expect(response.text.contains(#""expires_in":3600,"#))
            #expect(json["scope"] as? String == "openid profile")
            #expect(json["id_token"] == nil)

            #expect(server.isSpent(issued.refreshToken))
            #expect(server.refreshTokenState(issued.refreshToken) == .revoked)
            #expect(server.refreshTokenState(refresh) == .valid(expiresAt: .distantFuture))
            guard case .valid(let expiresAt) = server.accessTokenState(access) else {
                Issue.record("the new access token must be valid")
                return
            }
            #expect(abs(expiresAt.timeIntervalSinceNow - 3600) < 5)
            #expect(server.accessTokenState(issued.accessToken) != .revoked, "rotation leaves old access tokens alone")
            #expect(server.familyID(of: refresh) == issued.familyID)
            #expect(server.successfulRefreshes == 1)
            #expect(server.revokedFamilies == 0)

            let payload = try TokenPayloadDecoder().decode(response.body)
            #expect(payload.scopes == ["openid", "profile"])
        }
    }

    @Test func reusingASpentTokenRevokesTheWholeFamily() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            let first = try await refresh(server, issued.refreshToken)
            let access = try #require(first.json?["access_token"] as? String)
            let successor = try #require(first.json?["refresh_token"] as? String)

            let replay = try await refresh(server, issued.refreshToken)
            #expect(replay.status == 400)
            #expect(replay.errorCode == "invalid_grant")
            #expect(server.revokedFamilies == 1)
            #expect(server.isFamilyRevoked(issued.familyID))
            #expect(server.accessTokenState(access) == .revoked)
            #expect(server.accessTokenState(issued.accessToken) == .revoked)
            #expect(server.refreshTokenState(successor) == .revoked)

            let afterwards = try await refresh(server, successor)
            #expect(afterwards.errorCode == "invalid_grant", "the successor died with its family")
            #expect(server.revokedFamilies == 1, "a revoked family is not counted again")
            #expect(server.presentations[issued.refreshToken] == 2)
            #expect(server.refreshTokensPresentedTwice == [issued.refreshToken])
            #expect(server.successfulRefreshes == 1)
        }
    }

    @Test func withoutReuseDetectionASpentTokenIsRefusedAlone() async throws {
        var options = TestOAuthServer.Options()
        options.reuseDetection = false
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            let successor = try #require(
                try await refresh(server, issued.refreshToken).json?["refresh_token"] as? String)
            #expect(try await refresh(server, issued.refreshToken).errorCode == "invalid_grant")
            #expect(server.revokedFamilies == 0)
            #expect(try await refresh(server, successor).status == 200)
        }
    }

    @Test func graceWindowAcceptsTheSpentTokenUntilItCloses() async throws {
        var options = TestOAuthServer.Options()
        options.graceWindow = 30
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            let first = try await refresh(server, issued.refreshToken)
            let successor = try #require(first.json?["refresh_token"] as? String)
            guard case .valid = server.refreshTokenState(issued.refreshToken) else {
                Issue.record("within the grace window the spent token is still accepted")
                return
            }

            let retry = try await refresh(server, issued.refreshToken)
            #expect(retry.status == 200, "within the grace window: a fresh pair")
            let second = try #require(retry.json?["refresh_token"] as? String)
            #expect(second != successor)
            #expect(server.revokedFamilies == 0)

            server.update { $0.clockOffset = 31 }  // the grace window is over
            #expect(server.refreshTokenState(issued.refreshToken) == .revoked)
            #expect(try await refresh(server, issued.refreshToken).errorCode == "invalid_grant")
            #expect(server.revokedFamilies == 1)
            #expect(server.refreshTokenState(second) == .revoked)
        }
    }

    @Test(arguments: [false, true])
    func nonRotatingServerEchoesOrOmitsTheRefreshToken(omit: Bool) async throws {
        var options = TestOAuthServer.Options()
        options.rotateRefreshTokens = false
        options.omitRefreshTokenInResponse = omit
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            for _ in 0..<2 {
                let response = try await refresh(server, issued.refreshToken)
                #expect(response.status == 200)
                let json = try #require(response.json)
                if omit {
                    #expect(json["refresh_token"] == nil)
                    #expect(!response.text.contains("refresh_token"))
                } else {
                    #expect(json["refresh_token"] as? String == issued.refreshToken)
                }
            }
            #expect(!server.isSpent(issued.refreshToken))
            #expect(server.refreshTokenState(issued.refreshToken) == .valid(expiresAt: .distantFuture))
            #expect(server.presentations[issued.refreshToken] == 2, "presented twice, legitimately")
            #expect(server.revokedFamilies == 0)
            #expect(server.successfulRefreshes == 2)
        }
    }

    @Test func unknownTokenAndUnsupportedGrant() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let unknown = try await refresh(server, "rt-never-issued")
            #expect(unknown.status == 400)
            #expect(unknown.errorCode == "invalid_grant")
            let grant = try await TestHTTPClient.postForm(
                server.tokenURL, ["grant_type": "password", "username": "u"], basicAuth: Self.client)
            #expect(grant.errorCode == "unsupported_grant_type")
            let missing = try await TestHTTPClient.postForm(
                server.tokenURL, ["grant_type": "refresh_token"], basicAuth: Self.client)
            #expect(missing.errorCode == "invalid_request")
            let notAForm = try await TestHTTPClient.request(
                "POST", server.tokenURL,
                headers: [
                    "Content-Type": "application/json",
                    "Authorization": TestHTTPClient.basicAuthorization(user: "vault-client", password: "vault-secret"),
                ], body: Array(#"{"grant_type":"refresh_token"}"#.utf8))
            #expect(notAForm.errorCode == "invalid_request")
            #expect(server.accessTokenState("at-never-issued") == .unknown)
            #expect(server.refreshTokenState("rt-never-issued") == .unknown)
        }
    }

    @Test func expiredAccessTokensReadExpired() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue(lifetime: 0.3)
            guard case .valid = server.accessTokenState(issued.accessToken) else {
                Issue.record("a fresh token is valid")
                return
            }
            try await Task.sleep(for: .milliseconds(400))  // by the wall clock
            #expect(server.accessTokenState(issued.accessToken) == .expired)

            let later = server.issue()
            server.update { $0.clockOffset = 3601 }
            #expect(server.accessTokenState(later.accessToken) == .expired)
        }
    }

    @Test func refreshTokenLifetimeEndsRefreshing() async throws {
        var options = TestOAuthServer.Options()
        options.refreshTokenLifetime = 60
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server async throws in
            let issued = server.issue()
            server.update { $0.clockOffset = 61 }
            #expect(server.refreshTokenState(issued.refreshToken) == .expired)
            #expect(try await refresh(server, issued.refreshToken).errorCode == "invalid_grant")
        }
    }

    // MARK: Response spelling

    @Test(
        arguments: [
            (ExpiresInFormat.integer, 3600.0, #""expires_in":3600,"#, 3600.0),
            (.string, 3600, #""expires_in":"3600","#, 3600),
            (.float, 3600, #""expires_in":3600.0,"#, 3600),
            (.float, 1799.5, #""expires_in":1799.5,"#, 1799),
            (.absent, 3600, nil, nil),
            (.zero, 3600, #""expires_in":0,"#, nil),
        ] as [(ExpiresInFormat, Double, String?, Double?)])
    func expiresInFormats(format: ExpiresInFormat, lifetime: Double, spelled: String?, decoded: Double?) async throws {
        var options = TestOAuthServer.Options()
        options.expiresInFormat = format
        options.accessTokenLifetime = lifetime
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let response = try await refresh(server, server.issue().refreshToken)
            #expect(response.status == 200)
            if let spelled {
                #expect(response.text.contains(spelled), "\(response.text)")
            } else {
                #expect(!response.text.contains("expires_in"))
            }
            let payload = try TokenPayloadDecoder().decode(response.body)
            switch (payload.expiry, decoded) {
            case (.after(let seconds), let expected?): #expect(seconds == expected)
            case (.unknown, nil): break
            default: Issue.record("the vault read \(payload.expiry), expected \(String(describing: decoded))")
            }
        }
    }

    @Test func scopeFormats() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue(scopes: ["a", "b"])
            let asString = try await refresh(server, issued.refreshToken)
            #expect(asString.json?["scope"] as? String == "a b")

            server.update { $0.scopeFormat = .array }
            let next = try #require(asString.json?["refresh_token"] as? String)
            let asArray = try await refresh(server, next)
            #expect(asArray.json?["scope"] as? [String] == ["a", "b"])
            #expect(try TokenPayloadDecoder().decode(asArray.body).scopes == ["a", "b"])

            server.update { $0.scopeFormat = .absent }
            let last = try #require(asArray.json?["refresh_token"] as? String)
            let absent = try await refresh(server, last)
            #expect(absent.status == 200)
            #expect(absent.json?["scope"] == nil)
        }
    }

    @Test func idTokenIsAnUnsignedJWTForTheClient() async throws {
        var options = TestOAuthServer.Options()
        options.includeIDToken = true
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            let response = try await refresh(server, issued.refreshToken)
            let idToken = try #require(response.json?["id_token"] as? String)
            #expect(idToken.hasSuffix("."), "alg none: empty signature")
            let header = try #require(idToken.split(separator: ".").first)
            #expect(claims(header + "." + header + ".")["alg"] as? String == "none")
            let payload = claims(idToken)
            #expect(payload["sub"] as? String == issued.subject)
            #expect(payload["aud"] as? String == "vault-client")
            let issuedAt = try #require(payload["iat"] as? Int)
            let expiry = try #require(payload["exp"] as? Int)
            #expect(expiry - issuedAt == 3600)
            #expect(abs(Double(issuedAt) - Date().timeIntervalSince1970) < 5)
            #expect(try TokenPayloadDecoder().decode(response.body).subject == issued.subject)
        }
    }

    @Test func stateIsEchoedWhenAsked() async throws {
        var options = TestOAuthServer.Options()
        options.echoState = true
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let response = try await refresh(server, server.issue().refreshToken, extra: ["state": "s-123"])
            #expect(response.json?["state"] as? String == "s-123")
        }
    }

    // MARK: Errors

    @Test(arguments: [ErrorShape.rfc6749, .tinkoff, .sberGateway, .esia])
    func errorShapes(shape: ErrorShape) async throws {
        var options = TestOAuthServer.Options()
        options.errorShape = shape
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            server.script(.error(status: 401, code: "invalid_client", description: "who are you"))
            for response in [
                try await refresh(server, server.issue().refreshToken),  // scripted
                try await TestHTTPClient.postForm(
                    server.tokenURL, ["grant_type": "refresh_token", "refresh_token": "x"],
                    basicAuth: (user: "vault-client", password: "wrong")),  // the server's own
            ] {
                #expect(response.status == 401)
                let json = try #require(response.json)
                switch shape {
                case .rfc6749:
                    #expect(json["error"] as? String == "invalid_client")
                    #expect(json["error_description"] is String)
                    #expect(json["error_message"] == nil)
                case .tinkoff:
                    #expect(json["error"] as? String == "invalid_client")
                    #expect(json["error_message"] is String)
                    #expect(json["error_description"] == nil)
                case .sberGateway:
                    #expect(json["httpCode"] as? String == "401")
                    #expect(json["httpMessage"] as? String == "Unauthorized")
                    #expect((json["moreInformation"] as? String)?.hasPrefix("invalid_client: ") == true)
                    #expect(json["error"] == nil)
                case .esia:
                    #expect(json["error"] as? String == "invalid_client")
                    #expect((json["error_description"] as? String)?.hasPrefix("ESIA-007053: ") == true)
                }
            }
            let first = server.requests.first
            #expect(first?.form["grant_type"] == "refresh_token")
        }
    }

    @Test func esiaInvalidGrantCarriesItsNumber() async throws {
        var options = TestOAuthServer.Options()
        options.errorShape = .esia
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let response = try await refresh(server, "rt-unknown")
            #expect((response.json?["error_description"] as? String)?.hasPrefix("ESIA-007011: ") == true)
        }
    }

    @Test func retryAfterIsSentVerbatimAndTheScriptIsFirstInFirstOut() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            server.script(
                .error(status: 429, code: "limit_exceeded", retryAfter: "7"),
                .error(status: 503, code: "temporarily_unavailable", retryAfter: "Wed, 21 Oct 2026 07:28:00 GMT"))
            #expect(server.pendingScriptSteps == 2)
            let limited = try await refresh(server, issued.refreshToken)
            #expect(limited.status == 429)
            #expect(limited.headers["retry-after"] == "7")
            #expect(limited.errorCode == "limit_exceeded")
            let unavailable = try await refresh(server, issued.refreshToken)
            #expect(unavailable.status == 503)
            #expect(unavailable.headers["retry-after"] == "Wed, 21 Oct 2026 07:28:00 GMT")
            #expect(!server.isSpent(issued.refreshToken), "scripted errors change nothing")
            let normal = try await refresh(server, issued.refreshToken)
            #expect(normal.status == 200, "the queue is empty: served normally")
            #expect(normal.headers["retry-after"] == nil)
            #expect(server.pendingScriptSteps == 0)
            #expect(server.presentations[issued.refreshToken] == 3, "scripted requests count as presentations")
        }
    }

    @Test func htmlErrorPage() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            server.script(.htmlError(status: 502))
            let response = try await refresh(server, server.issue().refreshToken)
            #expect(response.status == 502)
            #expect(response.headers["content-type"]?.hasPrefix("text/html") == true)
            #expect(response.text.contains("<html>") && response.text.contains("502 Bad Gateway"))
            #expect(response.json == nil)
        }
    }

    @Test func delayOutlastsAClientTimeoutAndTheRequestIsStillHandled() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            server.script(.delay(seconds: 12))
            let started = ContinuousClock.now
            await #expect(throws: TestHTTPClientError.timedOut) {
                try await refresh(server, issued.refreshToken, timeout: 0.2)
            }
            // Wide margins: a busy machine may be slow to wake either side (a 0.2 s timeout seen
            // at 1.5 s, and once at 4 s, under make test's load); what matters is the client
            // leaving long before the delay ends.
            #expect(ContinuousClock.now - started < .seconds(8), "the client gave up first")
            #expect(!server.isSpent(issued.refreshToken), "not handled before the delay ends")
            let deadline = started + .seconds(20)
            while !server.isSpent(issued.refreshToken), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(server.isSpent(issued.refreshToken), "handled when the delay ended, though the client had left")
            #expect(server.successfulRefreshes == 1)
        }
    }

    @Test func delayedAnswerArrivesForAPatientClient() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            server.script(.delay(seconds: 0.3))
            let started = ContinuousClock.now
            let response = try await refresh(server, server.issue().refreshToken, timeout: 5)
            #expect(response.status == 200)
            #expect(ContinuousClock.now - started >= .milliseconds(300))
        }
    }

    @Test func rotateThenDropSpendsTheTokenAndHangsUp() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server async throws in
            let issued = server.issue()
            server.script(.rotateThenDrop)
            await #expect(throws: TestHTTPClientError.closedWithoutResponse) {
                try await refresh(server, issued.refreshToken)
            }
            #expect(server.isSpent(issued.refreshToken), "the server rotated before hanging up")
            #expect(server.refreshTokenState(issued.refreshToken) == .revoked)
            #expect(server.successfulRefreshes == 1)
            // The unknown outcome: retrying with the same token is reuse, and kills the family.
            #expect(try await refresh(server, issued.refreshToken).errorCode == "invalid_grant")
            #expect(server.revokedFamilies == 1)
            #expect(server.refreshTokensPresentedTwice == [issued.refreshToken])
        }
    }

    @Test(arguments: [false, true])
    func malformedJSON(rotating: Bool) async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            server.script(.malformedJSON(rotating: rotating))
            let response = try await refresh(server, issued.refreshToken)
            #expect(response.status == 200)
            #expect(response.headers["content-type"] == "application/json")
            #expect((try? JSONSerialization.jsonObject(with: Data(response.body))) == nil, "not parseable")
            #expect(throws: VaultError.self) { try TokenPayloadDecoder().decode(response.body) }
            #expect(server.isSpent(issued.refreshToken) == rotating)
            #expect(server.successfulRefreshes == (rotating ? 1 : 0))
        }
    }

    @Test func compactJWTBodyInsteadOfJSON() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            server.script(.compactJWTBody)
            let response = try await refresh(server, issued.refreshToken)
            #expect(response.status == 200)
            #expect(response.text.split(separator: ".", omittingEmptySubsequences: false).count == 3)
            #expect(response.json == nil)
            #expect(claims(response.text)["aud"] as? String == "vault-client")
            #expect(!server.isSpent(issued.refreshToken), "no rotation")
            #expect(server.refreshTokenState(issued.refreshToken) == .valid(expiresAt: .distantFuture))
        }
    }

    @Test func rawResponseIsSentAsGiven() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            server.script(.raw(status: 418, headers: ["X-Teapot": "yes", "Content-Type": "text/plain"], body: "short"))
            let response = try await refresh(server, server.issue().refreshToken)
            #expect(response.status == 418)
            #expect(response.headers["x-teapot"] == "yes")
            #expect(response.headers["content-length"] == "5")
            #expect(response.text == "short")
        }
    }

    // MARK: Client authentication and headers

    @Test func basicClientAuthentication() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            let form = ["grant_type": "refresh_token", "refresh_token": issued.refreshToken]
            let wrong = try await TestHTTPClient.postForm(
                server.tokenURL, form, basicAuth: (user: "vault-client", password: "nope"))
            #expect(wrong.status == 401)
            #expect(wrong.errorCode == "invalid_client")
            #expect(wrong.headers["www-authenticate"]?.hasPrefix("Basic") == true)
            let missing = try await TestHTTPClient.postForm(server.tokenURL, form)
            #expect(missing.status == 401)
            let otherClient = try await TestHTTPClient.postForm(
                server.tokenURL, form.merging(["client_id": "someone-else"]) { $1 }, basicAuth: Self.client)
            #expect(otherClient.status == 401, "a client_id in the body must match too")
            #expect(!server.isSpent(issued.refreshToken), "refused requests change nothing")
            #expect(try await TestHTTPClient.postForm(server.tokenURL, form, basicAuth: Self.client).status == 200)
        }
    }

    @Test func publicClientSendsAnEmptyPassword() async throws {
        var options = TestOAuthServer.Options()
        options.clientSecret = nil
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let form = [
                "grant_type": "refresh_token", "refresh_token": server.issue().refreshToken,
                "client_id": "vault-client",
            ]
            #expect(
                try await TestHTTPClient.postForm(
                    server.tokenURL, form, basicAuth: (user: "vault-client", password: "x")
                )
                .status == 401)
            let response = try await TestHTTPClient.postForm(
                server.tokenURL, form, basicAuth: (user: "vault-client", password: ""))
            #expect(response.status == 200)
            #expect(server.requests.last?.headers["authorization"] == "Basic dmF1bHQtY2xpZW50Og==")  // "vault-client:"
        }
    }

    @Test func postAndNoneClientAuthentication() async throws {
        var options = TestOAuthServer.Options()
        options.clientAuthentication = .post
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            let base = ["grant_type": "refresh_token", "refresh_token": issued.refreshToken]
            #expect(
                try await TestHTTPClient.postForm(server.tokenURL, base, basicAuth: Self.client).status == 401,
                "post wants the credentials in the form")
            let wrong = try await TestHTTPClient.postForm(
                server.tokenURL, base.merging(["client_id": "vault-client", "client_secret": "bad"]) { $1 })
            #expect(wrong.errorCode == "invalid_client")
            #expect(wrong.headers["www-authenticate"] == nil)
            let good = try await TestHTTPClient.postForm(
                server.tokenURL, base.merging(["client_id": "vault-client", "client_secret": "vault-secret"]) { $1 })
            #expect(good.status == 200)

            server.update { $0.clientAuthentication = .none }
            let next = try #require(good.json?["refresh_token"] as? String)
            let noID = ["grant_type": "refresh_token", "refresh_token": next]
            #expect(try await TestHTTPClient.postForm(server.tokenURL, noID).errorCode == "invalid_client")
            let withID = try await TestHTTPClient.postForm(
                server.tokenURL, noID.merging(["client_id": "vault-client"]) { $1 })
            #expect(withID.status == 200)
        }
    }

    @Test func requiredHeaders() async throws {
        var options = TestOAuthServer.Options()
        options.requiredHeaders = ["X-SSO-No-Adapter": "true"]
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            let missing = try await refresh(server, issued.refreshToken)
            #expect(missing.status == 400)
            #expect(missing.errorCode == "invalid_request")
            let wrong = try await TestHTTPClient.postForm(
                server.tokenURL, ["grant_type": "refresh_token", "refresh_token": issued.refreshToken],
                basicAuth: Self.client, headers: ["X-SSO-No-Adapter": "false"])
            #expect(wrong.status == 400)
            let good = try await TestHTTPClient.postForm(
                server.tokenURL, ["grant_type": "refresh_token", "refresh_token": issued.refreshToken],
                basicAuth: Self.client, headers: ["x-sso-no-adapter": "true"])
            #expect(good.status == 200, "header names in any case")
            #expect(try await revoke(server, "whatever", hint: "access_token").status == 400, "both endpoints check")
        }
    }

    // MARK: Revocation

    @Test func revokingARefreshTokenRevokesItsFamily() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            let other = server.issue()
            let response = try await revoke(server, issued.refreshToken, hint: "refresh_token")
            #expect(response.status == 200)
            #expect(response.text == "{}")
            #expect(response.headers["content-type"] == "application/json")
            #expect(server.refreshTokenState(issued.refreshToken) == .revoked)
            #expect(server.accessTokenState(issued.accessToken) == .revoked)
            #expect(server.isFamilyRevoked(issued.familyID))
            #expect(server.revokedFamilies == 0, "an asked-for revocation is not reuse detection")
            #expect(try await refresh(server, issued.refreshToken).errorCode == "invalid_grant")
            guard case .valid = server.accessTokenState(other.accessToken) else {
                Issue.record("other families are untouched")
                return
            }
            #expect(server.revocationRequestCount == 1)
            #expect(server.tokenRequestCount == 1)
        }
    }

    @Test func revokingAnAccessTokenRevokesOnlyIt() async throws {
        var options = TestOAuthServer.Options()
        options.revocationAnswer = .plainOK
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            let response = try await revoke(server, issued.accessToken, hint: "access_token")
            #expect(response.status == 200)
            #expect(response.text == "OK")
            #expect(response.headers["content-type"]?.hasPrefix("text/plain") == true)
            #expect(server.accessTokenState(issued.accessToken) == .revoked)
            #expect(server.refreshTokenState(issued.refreshToken) == .valid(expiresAt: .distantFuture))
            #expect(try await refresh(server, issued.refreshToken).status == 200)
        }
    }

    @Test func revokingAnUnknownTokenStillAnswers200() async throws {
        var options = TestOAuthServer.Options()
        options.revocationAnswer = .empty
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let response = try await revoke(server, "rt-nobody-knows", hint: "refresh_token")
            #expect(response.status == 200)
            #expect(response.body.isEmpty)
            #expect(response.headers["content-length"] == "0")
            let wrongClient = try await TestHTTPClient.postForm(
                server.revocationURL, ["token": "x"], basicAuth: (user: "vault-client", password: "nope"))
            #expect(wrongClient.status == 401, "client authentication on the revocation endpoint too")
        }
    }

    @Test func scriptedRevocationOutageThenSuccess() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            server.scriptRevocation(.error(status: 503, code: "temporarily_unavailable", retryAfter: "2"))
            let refused = try await revoke(server, issued.refreshToken, hint: "refresh_token")
            #expect(refused.status == 503)
            #expect(refused.headers["retry-after"] == "2")
            #expect(server.refreshTokenState(issued.refreshToken) == .valid(expiresAt: .distantFuture), "not revoked")
            #expect(try await refresh(server, issued.refreshToken).status == 200, "token scripts are separate")
            let retried = try await revoke(server, issued.accessToken, hint: "access_token")
            #expect(retried.status == 200)
            #expect(server.accessTokenState(issued.accessToken) == .revoked)
            #expect(server.revocationRequestCount == 2)
        }
    }

    // MARK: Code exchange

    @Test func pkceS256MatchesRFC7636AppendixB() {
        #expect(
            PKCE.challenge(for: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
                == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        #expect(PKCE.challenge(for: "") == "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU")  // SHA-256("")
        let verifier = PKCE.makeVerifier()
        #expect(verifier.count == 43 && PKCE.isWellFormedVerifier(verifier))
        #expect(!PKCE.isWellFormedVerifier("too-short"))
    }

    @Test func codeExchangeChecksPKCEAndRefusesReplay() async throws {
        var options = TestOAuthServer.Options()
        options.includeIDToken = true
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let verifier = PKCE.makeVerifier()
            server.registerCode(
                "code-1", codeChallenge: PKCE.challenge(for: verifier), redirectURI: "app://callback", nonce: "n-42",
                scopes: ["openid"])
            func exchange(verifier: String?, redirect: String = "app://callback") async throws -> TestHTTPResponse {
                var form = ["grant_type": "authorization_code", "code": "code-1", "redirect_uri": redirect]
                form["code_verifier"] = verifier
                return try await TestHTTPClient.postForm(server.tokenURL, form, basicAuth: Self.client)
            }

            #expect(try await exchange(verifier: PKCE.makeVerifier()).errorCode == "invalid_grant", "wrong verifier")
            #expect(try await exchange(verifier: nil).errorCode == "invalid_grant", "missing verifier")
            #expect(try await exchange(verifier: verifier, redirect: "app://other").errorCode == "invalid_grant")

            let good = try await exchange(verifier: verifier)
            #expect(good.status == 200)
            let json = try #require(good.json)
            let access = try #require(json["access_token"] as? String)
            let refresh = try #require(json["refresh_token"] as? String)
            #expect(access.hasPrefix("at-") && refresh.hasPrefix("rt-"))
            #expect(json["scope"] as? String == "openid")
            let idClaims = claims(try #require(json["id_token"] as? String))
            #expect(idClaims["nonce"] as? String == "n-42")
            #expect(idClaims["aud"] as? String == "vault-client")
            #expect(server.successfulCodeExchanges == 1)

            let replay = try await exchange(verifier: verifier)
            #expect(replay.status == 400)
            #expect(replay.errorCode == "invalid_grant")
            #expect(server.accessTokenState(access) == .revoked, "a replayed code revokes what it gave")
            #expect(server.successfulCodeExchanges == 1)
        }
    }

    // MARK: Connections

    @Test func keepAliveConnectionServesSeveralRequests() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let connection = try await TestHTTPConnection.connect(port: server.port)
            var token = server.issue().refreshToken
            for _ in 0..<3 {
                let response = try await connection.postForm(
                    "/token", ["grant_type": "refresh_token", "refresh_token": token], basicAuth: Self.client)
                #expect(response.status == 200)
                #expect(response.headers["content-length"] == String(response.body.count))
                token = try #require(response.json?["refresh_token"] as? String)
            }
            #expect(connection.isOpen)
            #expect(server.successfulRefreshes == 3)
            await connection.close()
        }
    }

    @Test func offlineClosesKeepAliveConnectionsAndComeBackUsesTheSamePort() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            let port = server.port
            let connection = try await TestHTTPConnection.connect(port: port)
            let first = try await connection.postForm(
                "/token", ["grant_type": "refresh_token", "refresh_token": issued.refreshToken], basicAuth: Self.client)
            let successor = try #require(first.json?["refresh_token"] as? String)

            await server.goOffline()
            #expect(await connection.waitForClose(timeout: 2), "the idle keep-alive connection was closed")
            var failure: TestHTTPClientError?
            do {
                _ = try await refresh(server, successor, timeout: 2)
            } catch let error as TestHTTPClientError {
                failure = error
            }
            guard case .connectionFailed? = failure else {
                Issue.record("expected connection refused while offline, got \(String(describing: failure))")
                return
            }

            try await server.comeBack()
            #expect(server.port == port)
            #expect(server.tokenURL == "http://127.0.0.1:\(port)/token")
            let back = try await refresh(server, successor)
            #expect(back.status == 200, "tokens survive the outage")
            await server.goOffline()
            try await server.comeBack()
            #expect(
                try await TestHTTPClient.request("GET", server.baseURL + "/.well-known/openid-configuration").status
                    == 200)
        }
    }

    @Test func discoveryDocumentNamesTheEndpoints() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let response = try await TestHTTPClient.request(
                "GET", server.baseURL + "/.well-known/oauth-authorization-server")
            let json = try #require(response.json)
            #expect(json["issuer"] as? String == server.baseURL)
            #expect(json["token_endpoint"] as? String == server.tokenURL)
            #expect(json["revocation_endpoint"] as? String == server.revocationURL)
            #expect(try await TestHTTPClient.request("GET", server.baseURL + "/nothing").status == 404)
            #expect(try await TestHTTPClient.request("GET", server.tokenURL).status == 405)
        }
    }

    // MARK: Counters

    @Test func everyRequestIsRecordedAndCounted() async throws {
        var options = TestOAuthServer.Options()
        options.tokenPath = "/auth/token"
        options.revocationPath = "/auth/revoke"
        let server = try await TestOAuthServer.start(options)
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            #expect(server.tokenURL.hasSuffix("/auth/token"))
            let issued = server.issue()
            _ = try await TestHTTPClient.postForm(
                server.tokenURL,
                ["grant_type": "refresh_token", "refresh_token": issued.refreshToken, "note": "a b&c=d"],
                basicAuth: Self.client, headers: ["X-Custom": "Yes"])
            _ = try await revoke(server, issued.accessToken, hint: "access_token")
            _ = try await TestHTTPClient.request("GET", server.baseURL + "/elsewhere?x=1")

            let requests = server.requests
            #expect(requests.map(\.path) == ["/auth/token", "/auth/revoke", "/elsewhere"])
            #expect(requests.map(\.method) == ["POST", "POST", "GET"])
            #expect(requests[0].headers["x-custom"] == "Yes")
            #expect(requests[0].form["note"] == "a b&c=d")
            #expect(requests[0].form["refresh_token"] == issued.refreshToken)
            #expect(String(decoding: requests[0].body, as: UTF8.self).contains("note=a+b%26c%3Dd"))
            #expect(requests[2].uri == "/elsewhere?x=1")
            #expect(requests[1].receivedAt >= requests[0].receivedAt)
            #expect(server.tokenRequestCount == 1)
            #expect(server.revocationRequestCount == 1)
            #expect(server.presentations == [issued.refreshToken: 1])
            #expect(server.refreshTokensPresentedTwice.isEmpty)

            server.resetCounters()
            #expect(server.requests.isEmpty && server.tokenRequestCount == 0 && server.presentations.isEmpty)
            #expect(server.successfulRefreshes == 0 && server.revocationRequestCount == 0)
            #expect(server.isSpent(issued.refreshToken), "tokens are not counters")
        }
    }

    @Test func concurrentRefreshesOfOneTokenKillTheFamily() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue()
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<2 { group.addTask { try await refresh(server, issued.refreshToken).status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.sorted() == [200, 400], "one wins, the other presents a spent token")
            #expect(server.refreshTokensPresentedTwice == [issued.refreshToken])
            #expect(server.revokedFamilies == 1)
            #expect(server.isFamilyRevoked(issued.familyID))
        }
    }

    @Test func issuedTokensResponseJSONIsWhatTheVaultAccepts() async throws {
        let server = try await TestOAuthServer.start()
        try await withStopping(server, stop: { await $0.shutdown() }) { server in
            let issued = server.issue(scopes: ["read", "write"], lifetime: 1800)
            #expect(issued.expiresIn == 1800)
            let payload = try TokenPayloadDecoder().decode(Array(issued.responseJSON.utf8))
            #expect(payload.expiry == .after(seconds: 1800))
            #expect(payload.scopes == ["read", "write"])
            #expect(payload.tokenType == "Bearer")
            #expect(
                issued.responseJSON.contains(issued.refreshToken) && issued.responseJSON.contains(issued.accessToken))
        }
    }
}
