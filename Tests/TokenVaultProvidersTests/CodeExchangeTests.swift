import Foundation
import Testing
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

/// Server-side code exchange (`TokenProvider.exchange`) for every kind, against the test
/// server's real PKCE S256 check: a wrong verifier is refused and leaves the code usable, the
/// right one gets tokens, a replayed code is refused (and, as RFC 6749 4.1.2 allows, revokes
/// what the first exchange gave), each refusal classified `.invalidGrant`.
@Suite struct CodeExchangeTests {
    static let redirectURI = "app://callback"

    /// Runs the three exchanges and returns the request of the successful one.
    static func checkPKCE(
        server: TestOAuthServer, provider: any TokenProvider, state: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> RecordedRequest {
        let code = "code-" + UUID().uuidString
        let verifier = PKCE.makeVerifier()
        server.registerCode(
            code, codeChallenge: PKCE.challenge(for: verifier), redirectURI: redirectURI, nonce: "n-1",
            scopes: ["openid"])
        func exchange(_ verifier: String) async -> Result<TokenPayload, ProviderFailure> {
            do {
                return .success(
                    try await provider.exchange(
                        KindFixture<OAuth2Provider>.exchangeRequest(
                            code: code, verifier: verifier, redirectURI: redirectURI, state: state)))
            } catch {
                return .failure(error)
            }
        }

        guard case .failure(let wrong) = await exchange(PKCE.makeVerifier()) else {
            Issue.record("a wrong verifier was accepted", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        #expect(wrong.kind == .invalidGrant, "\(wrong)", sourceLocation: sourceLocation)

        let payload = try await exchange(verifier).get()
        let accepted = try #require(server.requests.last, sourceLocation: sourceLocation)
        let access = payload.secrets.accessToken.revealString()
        #expect(server.successfulCodeExchanges == 1, sourceLocation: sourceLocation)
        #expect(payload.secrets.refreshToken != nil, sourceLocation: sourceLocation)
        #expect(payload.scopes == ["openid"], sourceLocation: sourceLocation)

        guard case .failure(let replay) = await exchange(verifier) else {
            Issue.record("a replayed code was accepted", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        #expect(replay.kind == .invalidGrant, "\(replay)", sourceLocation: sourceLocation)
        #expect(!replay.message.contains(code), sourceLocation: sourceLocation)
        #expect(server.accessTokenState(access) == .revoked, sourceLocation: sourceLocation)
        #expect(server.successfulCodeExchanges == 1, sourceLocation: sourceLocation)
        return accepted
    }

    @Test func oauth2() async throws {
        try await OAuth2ProviderFixture.run { fixture in
            let request = try await Self.checkPKCE(server: fixture.server, provider: fixture.provider)
            #expect(
                request.formFields.map(\.name) == ["grant_type", "code", "redirect_uri", "code_verifier", "client_id"])
            #expect(request.form["grant_type"] == "authorization_code")
            #expect(basicCredentials(request.headers["authorization"]) == "vault-client:vault-secret")
        }
    }

    @Test func tinkoffID() async throws {
        try await TinkoffIDProviderTests.run { fixture in
            let request = try await Self.checkPKCE(server: fixture.server, provider: fixture.provider)
            #expect(request.uri == "/auth/token")
            #expect(request.headers["x-sso-no-adapter"] == "true")
            #expect(basicCredentials(request.headers["authorization"]) == "vault-client:")
            #expect(
                request.formFields.map(\.name) == ["grant_type", "code", "code_verifier", "redirect_uri", "client_id"])
            #expect(request.form["grant_type"] == "authorization_code")
            #expect(request.form["redirect_uri"] == Self.redirectURI)
            #expect(request.form["client_id"] == "vault-client")
        }
    }

    @Test func sberID() async throws {
        try await SberIDProviderTests.run { fixture in
            let request = try await Self.checkPKCE(server: fixture.server, provider: fixture.provider)
            #expect(SberIDProviderTests.isRequestID(request.headers["rquid"]))
            #expect(request.headers["x-ibm-client-id"] == "vault-client")
            #expect(
                request.formFields.map(\.name) == [
                    "grant_type", "code", "redirect_uri", "code_verifier", "client_id", "client_secret",
                ])
            #expect(request.form["client_secret"] == "vault-secret")
        }
    }

    @Test(arguments: ["a3c1f0e2-7b44-4d1e-9a51-0c2f3e4d5b6a", nil])
    func esia(state: String?) async throws {
        try await ESIAProviderTests.run { fixture in
            let request = try await Self.checkPKCE(server: fixture.server, provider: fixture.provider, state: state)
            #expect(
                request.formFields.map(\.name) == [
                    "client_id", "grant_type", "code", "code_verifier", "state", "timestamp", "client_secret", "scope",
                    "redirect_uri", "token_type", "client_certificate_hash",
                ])
            let form = request.form
            #expect(form["grant_type"] == "authorization_code")
            #expect(form["redirect_uri"] == Self.redirectURI, "the request's, not the configured one")
            let sentState = try #require(form["state"])
            if let state { #expect(sentState == state) } else { #expect(UUID(uuidString: sentState) != nil) }
            // The signer's copy of its input is the last request's (the replay).
            let last = try #require(fixture.server.requests.last?.form)
            let signed = String(decoding: RawBytes.read(fixture.directory.file("signer.sh.in")), as: UTF8.self)
            #expect(
                signed == "vault-client" + ESIAProviderTests.scope + (last["timestamp"] ?? "?") + (last["state"] ?? "?")
                    + Self.redirectURI)
            #expect(ESIAProviderTests.isGoodSignature(last["client_secret"], of: signed))
        }
    }

    @Test func esiaExchangeWithAnotherStateInTheAnswerIsRefused() async throws {
        try await ESIAProviderTests.run { fixture in
            fixture.server.script(
                .raw(
                    status: 200, headers: ["Content-Type": "application/json"],
                    body: #"{"access_token":"at-1","expires_in":60,"state":"someone-else"}"#))
            let failure = await fixture.exchangeFailure(
                KindFixture<ESIAProvider>.exchangeRequest(code: "c", verifier: nil, state: "mine"))
            #expect(failure?.code == "state_mismatch")
            #expect(failure?.kind == .unknownOutcome)
        }
    }
}
