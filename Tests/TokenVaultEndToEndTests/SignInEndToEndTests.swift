import Foundation
import Testing
import TokenVaultTesting

/// Sign-ins through the built daemon against a real authorization server that is not ours
/// (Authlib, `scripts/authorization-server.py`): the vault starts the authorization (state, PKCE
/// S256, nonce; pushed when the server requires it), a browser consents or refuses, and the
/// vault finishes it from the callback URL, checking `iss`, redeeming the code with its kept
/// verifier and the id token's nonce, and repairing a credential that needed a new sign-in.
@Suite struct SignInEndToEndTests {
    static let callback = SignInHarness.callback

    /// The server and a daemon on SQLite (`SignInHarness`).
    func start(
        par: Bool = false, slowDown: Int = 0, deviceTokenDelay: Double = 0, webhooks: TestWebhookReceiver? = nil
    ) async throws -> (ResilienceHarness, AuthorizationServerProcess, DaemonProcess) {
        let (harness, server) = try await SignInHarness.make(
            par: par, slowDown: slowDown, deviceTokenDelay: deviceTokenDelay, webhooks: webhooks)
        return (harness, server, try harness.startDaemon(logLevel: "trace"))
    }

    func startSignIn(_ harness: ResilienceHarness, _ name: String, body: String? = nil) throws -> RawHTTPResponse {
        try UnixSocketHTTP.request(
            harness.socket, "POST", "/v1/credentials/people/\(name)/authorization",
            body: body
                ?? #"{"provider": "authlib", "redirect_uri": "http://127.0.0.1:43817/callback", "scopes": ["openid", "profile"], "labels": {"team": "crm"}}"#
        )
    }

    func finish(_ harness: ResilienceHarness, _ name: String, callbackURL: String) throws -> RawHTTPResponse {
        let body = try JSONSerialization.data(withJSONObject: ["callback_url": callbackURL])
        return try UnixSocketHTTP.request(
            harness.socket, "POST", "/v1/credentials/people/\(name)/authorization/callback",
            body: String(decoding: body, as: UTF8.self))
    }

    static func query(_ url: String) -> [String: String] {
        var items: [String: String] = [:]
        for item in URLComponents(string: url)?.queryItems ?? [] { items[item.name] = item.value ?? "" }
        return items
    }

    @Test func aPersonSignsInRefusesAndSignsInAgainToRepairTheCredential() async throws {
        let (harness, server, daemon) = try await start()
        defer { daemon.terminate() }
        let started = try startSignIn(harness, "alice")
        #expect(started.status == 201, "\(started.text)")
        #expect(started.headers["cache-control"] == "no-store")
        let url = try #require(started.json()["authorization_url"] as? String)
        #expect(url.hasPrefix(server.issuer + "/authorize?"))
        let query = Self.query(url)
        #expect(query["code_challenge_method"] == "S256" && query["nonce"]?.count == 43 && query["state"]?.count == 43)

        // The browser consents; the server redirects with code, state and iss (RFC 9207).
        let callback = try await server.signIn(url)
        #expect(callback.hasPrefix("http://127.0.0.1:43817/callback?") && Self.query(callback)["iss"] == server.issuer)
        let finished = try finish(harness, "alice", callbackURL: callback)
        #expect(finished.status == 201, "\(finished.text)")
        let metadata = finished.json()
        #expect(metadata["provider"] as? String == "authlib" && metadata["generation"] as? Int == 1)
        #expect(metadata["has_refresh_token"] as? Bool == true && metadata["has_id_token"] as? Bool == true)
        #expect(metadata["subject"] as? String == "person-1", "\(metadata)")
        #expect(!finished.text.contains("access_token"), "a sign-in answers metadata, never a token")
        // The same callback again: the state is spent.
        let again = try finish(harness, "alice", callbackURL: callback)
        #expect(again.status == 404 && again.json()["code"] as? String == "authorization_unknown", "\(again.text)")

        // The tokens work: a forced refresh at Authlib rotates them.
        try await Task.sleep(for: .seconds(1.1))
        let refreshed = try UnixSocketHTTP.request(harness.socket, "POST", "/v1/credentials/people/alice/refresh")
        #expect(refreshed.status == 200, "\(refreshed.text)")

        // A person who refuses: the server's error, nothing stored.
        let refused = try await server.signIn(
            try #require(try startSignIn(harness, "bob").json()["authorization_url"] as? String), allow: false)
        let denied = try finish(harness, "bob", callbackURL: refused)
        #expect(denied.status == 422 && denied.json()["code"] as? String == "authorization_denied", "\(denied.text)")
        #expect((denied.json()["detail"] as? String)?.contains("access_denied") == true)
        #expect(try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/people/bob").status == 404)

        // The server revokes the refresh token: the credential needs a new sign-in, which repairs it
        // in place (same id, labels kept, generation continued).
        try await server.revokeEverything()
        try await Task.sleep(for: .seconds(1.1))
        _ = try UnixSocketHTTP.request(harness.socket, "POST", "/v1/credentials/people/alice/refresh")
        let broken = try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/people/alice").json()
        #expect(broken["status"] as? String == "needs_reauth", "\(broken)")
        let generation = try #require(broken["generation"] as? Int)
        let repairURL = try #require(
            try startSignIn(
                harness, "alice",
                body:
                    #"{"provider": "authlib", "redirect_uri": "http://127.0.0.1:43818/callback", "scopes": ["openid"]}"#
            )
            .json()["authorization_url"] as? String)
        let repaired = try finish(harness, "alice", callbackURL: try await server.signIn(repairURL))
        #expect(repaired.status == 200, "\(repaired.text)")
        #expect(repaired.json()["status"] as? String == "active")
        #expect(repaired.json()["generation"] as? Int == generation + 1)
        #expect((repaired.json()["labels"] as? [String: String]) == ["team": "crm"])
        let listed = try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials?namespace=people").json()
        #expect((listed["items"] as? [Any])?.count == 1, "\(listed)")

        // Nothing secret in the daemon's trace-level log: no code, state, verifier or nonce.
        daemon.terminate()
        for secret in [Self.query(callback)["code"], query["state"], query["nonce"], query["code_challenge"]] {
            let secret = try #require(secret)
            #expect(!daemon.log.contains(secret), "a sign-in secret was logged")
        }
    }

    /// A server that requires pushed requests (RFC 9126) gets the parameters by a back channel;
    /// the URL the browser sees carries only the client id and the request's reference.
    @Test func aServerThatRequiresPushedRequestsGetsThem() async throws {
        let (harness, server, daemon) = try await start(par: true)
        defer { daemon.terminate() }
        let started = try startSignIn(harness, "carol")
        #expect(started.status == 201, "\(started.text)")
        #expect(started.json()["pushed"] as? Bool == true)
        let url = try #require(started.json()["authorization_url"] as? String)
        #expect(Set(Self.query(url).keys) == ["client_id", "request_uri"], "\(url)")
        let finished = try finish(harness, "carol", callbackURL: try await server.signIn(url))
        #expect(finished.status == 201, "\(finished.text)")
    }

    /// Every bad input: its own problem code, nothing stored.
    @Test func badInputIsRefusedWithItsOwnCode() async throws {
        let (harness, server, daemon) = try await start()
        defer { daemon.terminate() }
        func code(_ response: RawHTTPResponse) -> String { response.json()["code"] as? String ?? response.text }
        let elsewhere = try startSignIn(
            harness, "dan", body: #"{"provider": "authlib", "redirect_uri": "https://evil.example/callback"}"#)
        #expect(elsewhere.status == 422 && code(elsewhere) == "redirect_uri_not_allowed")
        let reserved = try startSignIn(
            harness, "dan",
            body: #"{"provider": "authlib", "redirect_uri": "http://127.0.0.1/callback", "parameters": {"state": "x"}}"#
        )
        #expect(reserved.status == 400 && code(reserved) == "invalid_field")
        let url = try #require(try startSignIn(harness, "dan").json()["authorization_url"] as? String)
        let callback = try await server.signIn(url)
        let twoStates = try finish(harness, "dan", callbackURL: callback + "&state=another")
        #expect(twoStates.status == 400 && code(twoStates) == "invalid_callback", "\(twoStates.text)")
        let unknown = try finish(harness, "dan", callbackURL: "http://127.0.0.1/callback?code=x&state=unknown")
        #expect(unknown.status == 404 && code(unknown) == "authorization_unknown")
        let forged = try finish(
            harness, "dan",
            callbackURL: callback.replacingOccurrences(of: "iss=", with: "iss=https%3A%2F%2Fevil.example%2F"))
        #expect(forged.status == 422 && code(forged) == "issuer_mismatch", "\(forged.text)")
        #expect(try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/people/dan").status == 404)

        // For a mobile SDK: the parameters, no URL.
        let parameters = try startSignIn(
            harness, "erin",
            body:
                #"{"provider": "authlib", "redirect_uri": "http://127.0.0.1/callback", "scopes": ["openid"], "mode": "parameters"}"#
        )
        #expect(parameters.status == 201 && parameters.json()["authorization_url"] == nil, "\(parameters.text)")
        let fields = try #require(parameters.json()["parameters"] as? [String: Any])
        #expect(
            fields["code_challenge_method"] as? String == "S256" && fields["client_id"] as? String == "vault-client")
        #expect(fields["code_verifier"] == nil)
    }

    /// `tokenvault login`: its loopback listener on a port of its own, a browser that consents,
    /// the redirect delivered to the listener, and the credential printed.
    @Test func theTerminalLoginCarriesTheRedirectBackToTheDaemon() async throws {
        let (harness, server, daemon) = try await start()
        defer { daemon.terminate() }
        let output = harness.directory.file("login.out")
        let errors = harness.directory.file("login.err")
        let login = try SpawnedProcess(
            executable: CommandRunner.locateBinary(),
            arguments: [
                "login", "people/frank", "--provider", "authlib", "--scope", "openid", "--label", "via=login",
                "--no-browser", "--timeout", "60", "--socket", harness.socket,
            ], environment: ["PATH": "/usr/bin:/bin"], stdout: output, stderr: errors)
        defer { login.signal(SIGKILL) }
        func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        var url: String?
        // Generous: a fresh clone's CI, every end-to-end suite at once on two cores, once took
        // 30 s from the command's start to its URL (a debug binary, discovery at Authlib).
        let deadline = Date().addingTimeInterval(120)
        while url == nil, Date() < deadline, login.isRunning {
            url = read(output).split(separator: "\n").first { $0.hasPrefix("http") }.map(String.init)
            try await Task.sleep(for: .milliseconds(50))
        }
        let authorizationURL = try #require(url, "no URL printed: \(read(errors))")
        let callback = try await server.signIn(authorizationURL)
        #expect(callback.hasPrefix("http://127.0.0.1:") && callback.contains("/callback?"), "\(callback)")
        // A browser's other requests are not the callback, and neither is another local process's
        // request naming no waiting sign-in: the real callback is still waited for.
        let origin = String(callback.prefix { $0 != "?" }).replacingOccurrences(of: "/callback", with: "")
        // The listener answers once the daemon has: on a loaded machine that takes seconds.
        let favicon = try await TestHTTPClient.request("GET", origin + "/favicon.ico", timeout: 60)
        #expect(favicon.status == 404)
        let forged = try await TestHTTPClient.request(
            "GET", origin + "/callback?code=forged&state=guessed", timeout: 60)
        #expect(forged.status == 400 && forged.text.contains("authorization_unknown"), "\(forged.text)")
        let page = try await TestHTTPClient.request("GET", callback, timeout: 60)
        #expect(page.status == 200 && page.text.contains("Signed in"), "\(page.text)")
        #expect(login.waitUntilExit() == 0, "\(read(errors))")
        let printed = read(output)
        #expect(printed.contains("people/frank") && printed.contains("via=login"), "\(printed)")
        let code = try #require(Self.query(callback)["code"])
        #expect(!printed.contains(code) && !read(errors).contains(code))
        let stored = try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/people/frank").json()
        #expect(stored["provider"] as? String == "authlib" && stored["has_refresh_token"] as? Bool == true)
    }

    /// A restored backup does not bring back a sign-in finished since it was taken: its state
    /// was spent, and a second finish must not reach the server with the code again.
    @Test func aRestoreForgetsPendingSignIns() async throws {
        let (harness, server, first) = try await start()
        let url = try #require(try startSignIn(harness, "hana").json()["authorization_url"] as? String)
        first.terminate()
        let backup = harness.directory.file("before-finish.db")
        let backedUp = try harness.cli.run(["backup", "--to", backup, "--data-dir", harness.dataDir])
        #expect(backedUp.status == 0, "\(backedUp.stderr)")

        let second = try harness.startDaemon()
        let callback = try await server.signIn(url)
        #expect(try finish(harness, "hana", callbackURL: callback).status == 201)
        second.terminate()

        let restored = try harness.cli.run(["restore", backup, "--data-dir", harness.dataDir])
        #expect(restored.status == 0, "\(restored.stderr)")
        let third = try harness.startDaemon()
        defer { third.terminate() }
        let again = try finish(harness, "hana", callbackURL: callback)
        #expect(again.status == 404 && again.json()["code"] as? String == "authorization_unknown", "\(again.text)")
    }
}
