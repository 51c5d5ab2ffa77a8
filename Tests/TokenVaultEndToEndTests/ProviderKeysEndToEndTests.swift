import Foundation
import Testing
import TokenVaultTesting

/// Id-token signatures and client authentication by key, through the built daemon against
/// Authlib (`scripts/authorization-server.py`), a server that is not ours: id tokens signed RS256
/// and ES256 checked with the server's JWKS, a rotated key found by its `kid`, refused id tokens
/// that cost no refresh token, another issuer's metadata refused, and `private_key_jwt` and
/// `client_secret_jwt` accepted by the server (a wrong key refused).
@Suite struct ProviderKeysEndToEndTests {
    static let signInBody =
        #"{"provider": "authlib", "redirect_uri": "http://127.0.0.1:43817/callback", "scopes": ["openid", "profile"]}"#

    /// The daemon's API and command line, each on a thread of its own: these tests' upstream and
    /// the other suites' in-process servers answer on the concurrency pool, which a blocking read
    /// on it would starve.
    static func http(
        _ socket: String, _ method: String, _ target: String, body: String? = nil, headers: [String: String] = [:]
    ) async throws -> RawHTTPResponse {
        try await offThePool { try UnixSocketHTTP.request(socket, method, target, body: body, headers: headers) }
    }

    static func cli(_ arguments: [String]) async throws -> CommandRunner.Result {
        try await offThePool { try CommandRunner().run(arguments) }
    }

    /// Signs `name` in through the vault and Authlib's consent page; the finishing answer.
    static func signIn(_ harness: ResilienceHarness, _ server: AuthorizationServerProcess, _ name: String) async throws
        -> RawHTTPResponse
    {
        let started = try await Self.http(
            harness.socket, "POST", "/v1/credentials/people/\(name)/authorization", body: signInBody)
        let url = try #require(started.json()["authorization_url"] as? String, "\(started.text)")
        let callback = try await server.signIn(url)
        let body = try JSONSerialization.data(withJSONObject: ["callback_url": callback])
        return try await Self.http(
            harness.socket, "POST", "/v1/credentials/people/\(name)/authorization/callback",
            body: String(decoding: body, as: UTF8.self))
    }

    /// A forced refresh, a second after the last call to the server (the instance's on-demand
    /// floor), and the credential's metadata after it.
    static func refresh(_ harness: ResilienceHarness, _ name: String) async throws -> (
        status: Int, metadata: [String: Any]
    ) {
        try await Task.sleep(for: .seconds(1.1))
        let refreshed = try await Self.http(harness.socket, "POST", "/v1/credentials/people/\(name)/refresh")
        let shown = try await Self.http(harness.socket, "GET", "/v1/credentials/people/\(name)")
        return (refreshed.status, shown.json())
    }

    static func lastError(_ metadata: [String: Any]) -> String? {
        (metadata["last_error"] as? [String: Any])?["code"] as? String
    }

    @Test(arguments: ["RS256", "ES256"])
    func idTokensAreCheckedWithTheServersKeysAndARotatedKeyIsFound(algorithm: String) async throws {
        let (harness, server) = try await SignInHarness.make(serverArguments: ["--id-token-alg", algorithm])
        let daemon = try await offThePool { try harness.startDaemon() }
        defer { daemon.terminate() }
        let shown = try await Self.cli(["providers", "show", "authlib", "--socket", harness.socket, "--json"])
        #expect(shown.status == 0, "\(shown.stderr)")
        let details = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any] ?? [:]
        #expect(
            details["id_token_signature"] as? String == "jwks"
                && details["jwks_uri"] as? String == server.issuer + "/jwks")
        #expect((details["id_token_signing_algorithms"] as? [String])?.contains(algorithm) == true, "\(details)")

        let finished = try await Self.signIn(harness, server, "alice")
        #expect(finished.status == 201 && finished.json()["has_id_token"] as? Bool == true, "\(finished.text)")
        var (status, metadata) = try await Self.refresh(harness, "alice")
        #expect(status == 200 && Self.lastError(metadata) == nil, "\(metadata)")
        #expect(try await server.hook("GET", "/test/jwks-fetches")["count"] as? Int == 1)

        // The server signs with a new key from now on: its kid is unknown, so the set is read again.
        let rotated = try await server.hook("POST", "/test/rotate-signing-key")["kid"] as? String
        (status, metadata) = try await Self.refresh(harness, "alice")
        #expect(status == 200 && Self.lastError(metadata) == nil, "\(metadata)")
        #expect(
            try await server.hook("GET", "/test/jwks-fetches")["count"] as? Int == 2, "rotated to \(rotated ?? "?")")
    }

    /// Each refused id token: the refresh is stored without it and says why on the credential;
    /// the next refresh works, which it could not had the rotated refresh token been lost (Authlib
    /// revokes the one it replaced). A sign-in whose id token is refused stores nothing.
    @Test func refusedIDTokensCostNoRefreshToken() async throws {
        let (harness, server) = try await SignInHarness.make()
        let daemon = try await offThePool { try harness.startDaemon() }
        defer { daemon.terminate() }
        #expect(try await Self.signIn(harness, server, "alice").status == 201)
        for fault in ["tampered", "expired", "wrong_audience", "alg_none", "hs256_public_key", "unknown_kid"] {
            try await server.hook("POST", "/test/id-token-fault", json: #"{"fault": "\#(fault)"}"#)
            var (status, metadata) = try await Self.refresh(harness, "alice")
            #expect(status == 200, "\(fault): \(metadata)")
            #expect(Self.lastError(metadata) == "id_token_invalid", "\(fault): \(metadata)")
            #expect(metadata["has_refresh_token"] as? Bool == true && metadata["subject"] as? String == "person-1")
            try await server.hook("POST", "/test/id-token-fault", json: #"{"fault": null}"#)
            (status, metadata) = try await Self.refresh(harness, "alice")
            #expect(status == 200 && Self.lastError(metadata) == nil, "after \(fault): \(metadata)")
        }
        try await server.hook("POST", "/test/id-token-fault", json: #"{"fault": "wrong_audience"}"#)
        let refused = try await Self.signIn(harness, server, "bob")
        #expect(refused.status == 422 && refused.json()["code"] as? String == "id_token_invalid", "\(refused.text)")
        #expect(try await Self.http(harness.socket, "GET", "/v1/credentials/people/bob").status == 404)
    }

    @Test func metadataNamingAnotherIssuerIsRefused() async throws {
        let (harness, server) = try await SignInHarness.make()
        try await server.hook("POST", "/test/metadata-issuer", json: #"{"issuer": "https://attacker.example"}"#)
        let daemon = try await offThePool { try harness.startDaemon() }
        defer { daemon.terminate() }
        let refused = try await Self.cli(["providers", "show", "authlib", "--socket", harness.socket])
        #expect(refused.status != 0 && refused.stderr.contains("attacker.example"), "\(refused.stderr)")
        let started = try await Self.http(
            harness.socket, "POST", "/v1/credentials/people/alice/authorization", body: Self.signInBody)
        #expect(started.status >= 400 && started.text.contains("issuer"), "\(started.text)")
        // Fixed at the server, the next call reads the document again.
        try await server.hook("POST", "/test/metadata-issuer", json: #"{"issuer": null}"#)
        #expect(try await Self.signIn(harness, server, "alice").status == 201)
    }

    /// The metadata read at the first start is kept in the vault: a restart while the server's
    /// metadata answers 503 uses that copy, and refreshes go on.
    @Test func aRestartWithTheMetadataDownUsesTheKeptCopy() async throws {
        let (harness, server) = try await SignInHarness.make()
        var daemon = try await offThePool { try harness.startDaemon() }
        #expect(try await Self.signIn(harness, server, "alice").status == 201)
        daemon.terminate()
        try await server.hook("POST", "/test/metadata-down", json: #"{"down": true}"#)
        daemon = try await offThePool { try harness.startDaemon() }
        defer { daemon.terminate() }
        let shown = try await Self.cli(["providers", "show", "authlib", "--socket", harness.socket, "--json"])
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(shown.stdout.contains(server.issuer + "/token"), "\(shown.stdout)")
        let (status, metadata) = try await Self.refresh(harness, "alice")
        #expect(status == 200 && Self.lastError(metadata) == nil, "\(metadata)")
    }

    @Test func privateKeyJWTIsAcceptedAndAnotherKeyRefused() async throws {
        let (harness, server) = try await SignInHarness.make(
            serverArguments: ["--client-auth", "private_key_jwt"],
            instance: #""client_authentication": "private_key_jwt""#,
            providers: """
                "other": {"kind": "oauth2", "issuer": "http://127.0.0.1:1", "client_id": "vault-client",
                    "client_authentication": "private_key_jwt"}
                """)
        let daemon = try await offThePool { try harness.startDaemon() }
        defer { daemon.terminate() }
        func keys(_ instance: String) async throws -> String {
            let printed = try await Self.cli(["providers", "jwks", instance, "--socket", harness.socket])
            #expect(printed.status == 0, "\(printed.stderr)")
            return printed.stdout
        }
        // A sign-in starts without client authentication (no pushed request); the code exchange
        // needs it, so the key is registered first.
        let unknown = try await Self.http(
            harness.socket, "POST", "/v1/credentials/people/alice/authorization", body: Self.signInBody)
        #expect(unknown.status == 201, "a plain authorization request needs no client authentication: \(unknown.text)")
        try await server.hook("POST", "/test/client-jwks", json: try await keys("authlib"))
        #expect(try await Self.signIn(harness, server, "alice").status == 201)
        var (status, metadata) = try await Self.refresh(harness, "alice")
        #expect(status == 200 && Self.lastError(metadata) == nil, "\(metadata)")
        let methods = try await server.hook("GET", "/test/client-auth")["methods"] as? [String] ?? []
        #expect(!methods.isEmpty && methods.allSatisfy { $0 == "private_key_jwt" }, "\(methods)")

        // The server now holds another instance's key: this one's assertions are refused.
        let otherKeys = try await keys("other")
        #expect(otherKeys != (try await keys("authlib")))
        try await server.hook("POST", "/test/client-jwks", json: otherKeys)
        (status, metadata) = try await Self.refresh(harness, "alice")
        #expect(status != 200 && Self.lastError(metadata) == "invalid_client", "\(metadata)")
    }

    /// RFC 8693 at Authlib: a token for an audience the server allows, derived from the stored
    /// access token (or refresh token) and answered from memory the second time; an audience it
    /// refuses and a wider scope are the server's refusals, and the credential is left as it is.
    @Test func tokenExchangeDerivesATokenForAnAudience() async throws {
        let (harness, server) = try await SignInHarness.make()
        let daemon = try await offThePool { try harness.startDaemon() }
        defer { daemon.terminate() }
        #expect(try await Self.signIn(harness, server, "alice").status == 201)
        func exchange(_ body: String) async throws -> RawHTTPResponse {
            try await Self.http(
                harness.socket, "POST", "/v1/credentials/people/alice/token-exchange", body: body)
        }
        let own = try await Self.http(harness.socket, "GET", "/v1/credentials/people/alice/token")
        let derived = try await exchange(#"{"audience": "api.example", "scopes": ["profile"]}"#)
        #expect(derived.status == 200 && derived.headers["cache-control"] == "no-store", "\(derived.text)")
        let token = try #require(derived.json()["access_token"] as? String)
        #expect(token != own.json()["access_token"] as? String)
        #expect(derived.json()["issued_token_type"] as? String == "urn:ietf:params:oauth:token-type:access_token")
        #expect(derived.json()["scopes"] as? [String] == ["profile"] && derived.json()["expires_at"] != nil)
        // The same request, its lists in another order: from memory.
        let again = try await exchange(#"{"scopes": ["profile"], "audience": ["api.example"]}"#)
        #expect(again.json()["access_token"] as? String == token)
        // The command line (and the Swift client under it) gets the same token.
        let printed = try await Self.cli([
            "token-exchange", "people/alice", "--audience", "api.example", "--scope", "profile", "--socket",
            harness.socket,
        ])
        #expect(printed.status == 0 && printed.stdout == token + "\n", "\(printed.stderr)")
        var recorded = try await server.hook("GET", "/test/exchanges")
        #expect(recorded["count"] as? Int == 1, "\(recorded)")
        let requests = recorded["requests"] as? [[String: Any]] ?? []
        #expect(requests.first?["audience"] as? [String] == ["api.example"])
        #expect(requests.first?["subject_token_type"] as? String == "urn:ietf:params:oauth:token-type:access_token")

        // The refresh token is never the subject, and a refresh token is never what is asked for.
        let fromRefresh = try await exchange(#"{"audience": "reports.example", "subject_token_type": "refresh_token"}"#)
        #expect(fromRefresh.status == 400 && fromRefresh.json()["field"] as? String == "subject_token_type")
        let asRefresh = try await exchange(
            #"{"audience": "reports.example", "requested_token_type": "urn:ietf:params:oauth:token-type:refresh_token"}"#
        )
        #expect(asRefresh.status == 400 && asRefresh.json()["field"] as? String == "requested_token_type")
        #expect(try await exchange("{}").status == 400, "an exchange names an audience, a resource or scopes")
        recorded = try await server.hook("GET", "/test/exchanges")
        #expect(recorded["count"] as? Int == 1)

        let refusedAudience = try await exchange(#"{"audience": "evil.example"}"#)
        #expect(
            refusedAudience.status == 422 && refusedAudience.text.contains("invalid_target"), "\(refusedAudience.text)")
        let widerScope = try await exchange(#"{"audience": "api.example", "scopes": ["admin"]}"#)
        #expect(widerScope.status == 422 && widerScope.text.contains("invalid_scope"), "\(widerScope.text)")
        // The credential itself is as it was: same generation, no error.
        let shown = try await Self.http(harness.socket, "GET", "/v1/credentials/people/alice").json()
        #expect(shown["generation"] as? Int == 1 && Self.lastError(shown) == nil, "\(shown)")
        let audit = try await Self.cli(["audit", "--socket", harness.socket, "--json"])
        #expect(audit.stdout.contains("token.exchange"), "\(audit.stdout.prefix(400))")
    }

    /// A proxy base that names an audience gets a token derived for it (RFC 8693 at Authlib), the
    /// same one `token-exchange` answers for that audience; a base without one gets the
    /// credential's own token.
    @Test func theProxySendsADerivedTokenToABaseWithAnAudience() async throws {
        let upstream = try await TestUpstream()
        let (harness, server) = try await SignInHarness.make(
            instance: #"""
                "client_secret_file": "$SECRET", "api_base_urls": [
                    {"url": "\#(upstream.base)/echo", "audience": "api.example"}, "\#(upstream.base)/"]
                """#)
        let daemon = try await offThePool { try harness.startDaemon() }
        defer { daemon.terminate() }
        #expect(try await Self.signIn(harness, server, "alice").status == 201)
        let derived = try await Self.http(
            harness.socket, "POST", "/v1/credentials/people/alice/token-exchange", body: #"{"audience": "api.example"}"#
        )
        let token = try #require(derived.json()["access_token"] as? String, "\(derived.text)")
        let own = try #require(
            try await Self.http(harness.socket, "GET", "/v1/credentials/people/alice/token").json()[
                "access_token"]
                as? String)
        let echoed = try await Self.http(harness.socket, "GET", "/v1/credentials/people/alice/proxy/echo/x")
        #expect(echoed.status == 200, "\(echoed.text)")
        let plain = try await Self.http(
            harness.socket, "GET", "/v1/credentials/people/alice/proxy/status?code=204",
            headers: ["TokenVault-Upstream-Base": upstream.base + "/"])
        #expect(plain.status == 204, "\(plain.text)")
        #expect(upstream.authorizations == ["Bearer " + token, "Bearer " + own], "\(upstream.received)")
        #expect(try await server.hook("GET", "/test/exchanges")["count"] as? Int == 1)
        await upstream.stop()
    }

    @Test func clientSecretJWTIsAccepted() async throws {
        let (harness, server) = try await SignInHarness.make(
            serverArguments: ["--client-auth", "client_secret_jwt"],
            instance: #""client_secret_file": "$SECRET", "client_authentication": "client_secret_jwt""#)
        let daemon = try await offThePool { try harness.startDaemon() }
        defer { daemon.terminate() }
        #expect(try await Self.signIn(harness, server, "alice").status == 201)
        let (status, metadata) = try await Self.refresh(harness, "alice")
        #expect(status == 200 && Self.lastError(metadata) == nil, "\(metadata)")
        let methods = try await server.hook("GET", "/test/client-auth")["methods"] as? [String] ?? []
        #expect(methods.count >= 2 && methods.allSatisfy { $0 == "client_secret_jwt" }, "\(methods)")
    }
}
