import Foundation
import Testing
import TokenVaultTesting

/// Server-side code exchange through the built daemon: PKCE S256 verified by the provider,
/// the id token's nonce and audience checked, and nothing stored when anything is wrong.
@Suite struct CodeExchangeTests {
    static let redirect = "https://app.example.test/callback"

    func exchange(
        _ harness: ResilienceHarness, _ name: String, code: String, verifier: String, nonce: String? = nil
    ) throws -> RawHTTPResponse {
        var body = """
            {"provider": "idp", "code": "\(code)", "code_verifier": "\(verifier)", "redirect_uri": "\(Self.redirect)"
            """
        if let nonce { body += ", \"nonce\": \"\(nonce)\"" }
        body += "}"
        return try UnixSocketHTTP.request(harness.socket, "POST", "/v1/credentials/idp/\(name)/exchange", body: body)
    }

    func stored(_ harness: ResilienceHarness, _ name: String) throws -> Int {
        try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/idp/\(name)").status
    }

    @Test func aCodeIsExchangedOnceAndStored() async throws {
        let harness = try await ResilienceHarness(
            lifetime: 3600, limits: #"{"concurrency": 4}"#, refresh: "{}", includeIDToken: true)
        let daemon = try harness.startDaemon(logLevel: "trace")
        defer { daemon.terminate() }
        let verifier = PKCE.makeVerifier()
        harness.server.registerCode(
            "code-1", codeChallenge: PKCE.challenge(for: verifier), redirectURI: Self.redirect, nonce: "n-1")

        let created = try exchange(harness, "alice", code: "code-1", verifier: verifier, nonce: "n-1")
        #expect(created.status == 201, "\(created.text)")
        let document = created.json()
        let token = document["token"] as? [String: Any]
        #expect((token?["access_token"] as? String)?.hasPrefix("at-") == true)
        #expect(!created.text.contains("rt-"), "the refresh token never leaves the vault")
        #expect((document["credential"] as? [String: Any])?["has_refresh_token"] as? Bool == true)
        #expect(created.headers["cache-control"] == "no-store")
        let form = harness.server.requests.last { $0.path == "/token" }?.form ?? [:]
        #expect(form["grant_type"] == "authorization_code" && form["code_verifier"] == verifier)
        #expect(form["redirect_uri"] == Self.redirect && form["client_id"] == "vault-client")

        // A replayed code: the provider's error, cleanly, and the stored credential untouched.
        let replay = try exchange(harness, "alice", code: "code-1", verifier: verifier)
        #expect(replay.status == 422 && replay.json()["code"] as? String == "provider_rejected", "\(replay.text)")
        #expect((replay.json()["detail"] as? String)?.contains("invalid_grant") == true)
        let after = try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/idp/alice").json()
        #expect(after["generation"] as? Int == 1)

        // The same through the CLI: it prints the access token only.
        let cliVerifier = PKCE.makeVerifier()
        harness.server.registerCode(
            "code-cli", codeChallenge: PKCE.challenge(for: cliVerifier), redirectURI: Self.redirect)
        // Secrets on the command line are refused, with the way to do it.
        let onArgv = try harness.cli.run([
            "exchange", "idp/carol", "--provider", "idp", "--code", "code-cli", "--code-file", "-",
            "--redirect-uri", Self.redirect, "--socket", harness.socket,
        ])
        #expect(onArgv.status == 64 && onArgv.stderr.contains("--code-file"), "\(onArgv.stderr)")
        let cli = try harness.cli.run(
            [
                "exchange", "idp/carol", "--provider", "idp", "--code-file", "-", "--redirect-uri", Self.redirect,
                "--label", "app=mobile", "--socket", harness.socket,
            ], stdin: "code-cli\n\(cliVerifier)\n")
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(cli.stdout.hasPrefix("at-") && !cli.stdout.contains("rt-"))
        let carol = try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/idp/carol").json()
        #expect((carol["labels"] as? [String: String])?["app"] == "mobile")
        daemon.terminate()
        #expect(ResilienceHarness.leakedTokens(in: daemon.log).isEmpty, "tokens in a trace-level daemon log")
        #expect(!daemon.log.contains("code-1") && !daemon.log.contains(verifier), "a code or verifier was logged")
    }

    @Test func aWrongVerifierNonceOrAudienceStoresNothing() async throws {
        let harness = try await ResilienceHarness(
            lifetime: 3600, limits: #"{"concurrency": 4}"#, refresh: "{}", includeIDToken: true)
        let daemon = try harness.startDaemon()
        defer { daemon.terminate() }
        let verifier = PKCE.makeVerifier()
        harness.server.registerCode(
            "code-2", codeChallenge: PKCE.challenge(for: verifier), redirectURI: Self.redirect, nonce: "right")

        let wrongVerifier = try exchange(harness, "bob", code: "code-2", verifier: PKCE.makeVerifier())
        #expect(wrongVerifier.status == 422 && wrongVerifier.json()["code"] as? String == "provider_rejected")
        #expect(try stored(harness, "bob") == 404)

        let wrongNonce = try exchange(harness, "bob", code: "code-2", verifier: verifier, nonce: "other")
        #expect(
            wrongNonce.status == 422 && wrongNonce.json()["code"] as? String == "nonce_mismatch", "\(wrongNonce.text)")
        #expect(try stored(harness, "bob") == 404)

        // An id token issued to another client.
        let claims = Data(#"{"sub":"u-1","aud":"someone-else","exp":4102444800}"#.utf8).base64EncodedString()
            .replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
        harness.server.script(
            .raw(
                status: 200, headers: ["Content-Type": "application/json"],
                body:
                    #"{"access_token":"at-foreign","token_type":"Bearer","expires_in":600,"id_token":"eyJhbGciOiJub25lIn0.\#(claims).sig"}"#
            ))
        let foreign = try exchange(harness, "bob", code: "any-code", verifier: verifier)
        #expect(foreign.status == 422 && foreign.json()["code"] as? String == "audience_mismatch", "\(foreign.text)")
        #expect(try stored(harness, "bob") == 404)

        let badVerifier = try exchange(harness, "bob", code: "c", verifier: "short")
        #expect(badVerifier.status == 400 && badVerifier.json()["field"] as? String == "code_verifier")
    }
}
