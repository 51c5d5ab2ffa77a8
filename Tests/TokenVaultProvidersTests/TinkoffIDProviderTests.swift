import Foundation
import Testing
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

/// Kind `tinkoff-id` against a `TestOAuthServer` set up as T-ID: endpoints under `/auth/`,
/// `X-SSO-No-Adapter: true` and `Accept: application/json` required, T-ID's error shape.
@Suite struct TinkoffIDProviderTests {
    typealias Fixture = KindFixture<TinkoffIDProvider>

    /// The server as T-ID; `secret` nil is a public mobile client.
    static func tid(secret: String?) -> @Sendable (inout TestOAuthServer.Options) -> Void {
        { options in
            options.tokenPath = "/auth/token"
            options.revocationPath = "/auth/revoke"
            options.requiredHeaders = ["X-SSO-No-Adapter": "true", "Accept": "application/json"]
            options.errorShape = .tinkoff
            options.clientAuthentication = .basic
            options.clientSecret = secret
        }
    }

    /// A provider for the server; `secret` nil configures no client secret.
    static func provider(secret: String?, extra: [String: JSONValue] = [:])
        -> (TestOAuthServer, TemporaryDirectory) throws -> TinkoffIDProvider
    {
        { server, directory in
            var options: [String: JSONValue] = ["host": .string(server.baseURL), "client_id": "vault-client"]
            if let secret { options["client_secret_file"] = .string(Fixture.secretFile(secret, in: directory)) }
            options.merge(extra) { $1 }
            return try TinkoffIDProvider(
                settings: ProviderTestSupport.settings(options, name: "tinkoff-id", kind: "tinkoff-id"),
                environment: [:])
        }
    }

    static func run(
        secret: String? = nil, server: @escaping @Sendable (inout TestOAuthServer.Options) -> Void = { _ in },
        _ body: (Fixture) async throws -> Void
    ) async throws {
        try await Fixture.run(
            server: { options in
                tid(secret: secret)(&options)
                server(&options)
            }, provider: provider(secret: secret), body)
    }

    @Test func mobileClientRefresh() async throws {
        try await Self.run { fixture in
            let issued = fixture.server.issue(scopes: ["openid"])
            let payload = try await fixture.refresh(issued.refreshToken)

            let request = try #require(fixture.server.requests.last)
            #expect(request.method == "POST")
            #expect(request.uri == "/auth/token")
            #expect(request.headers["x-sso-no-adapter"] == "true")
            #expect(request.headers["accept"] == "application/json")
            #expect(request.headers["content-type"] == "application/x-www-form-urlencoded")
            #expect(basicCredentials(request.headers["authorization"]) == "vault-client:", "empty password")
            #expect(request.formFields.map(\.name) == ["grant_type", "refresh_token", "client_id"])
            #expect(
                request.form == [
                    "grant_type": "refresh_token", "refresh_token": issued.refreshToken, "client_id": "vault-client",
                ])
            #expect(payload.secrets.refreshToken?.revealString() != issued.refreshToken)
            #expect(fixture.server.isSpent(issued.refreshToken))
            #expect(payload.expiry == .after(seconds: 3600))
            #expect(fixture.provider.supportsRevocation)
            #expect(fixture.provider.clientID == "vault-client")
        }
    }

    @Test func backendClientSendsItsSecretInBasicOnly() async throws {
        try await Self.run(secret: "s3cret:with/odd chars") { fixture in
            let issued = fixture.server.issue()
            _ = try await fixture.refresh(issued.refreshToken)
            let request = try #require(fixture.server.requests.last)
            #expect(basicCredentials(request.headers["authorization"]) == "vault-client:s3cret%3Awith%2Fodd+chars")
            #expect(request.form["client_secret"] == nil)
        }
    }

    @Test func defaultHostIsTBank() throws {
        let configuration = try #require(
            try TinkoffIDConfiguration.parse(
                ProviderTestSupport.settings(["client_id": "app"], kind: "tinkoff-id"), environment: [:]))
        #expect(configuration.tokenEndpoint == "https://id.tbank.ru/auth/token")
        #expect(configuration.revocationEndpoint == "https://id.tbank.ru/auth/revoke")
        #expect(!configuration.hasClientSecret)
        let trailing = try #require(
            try TinkoffIDConfiguration.parse(
                ProviderTestSupport.settings(
                    ["client_id": "app", "host": "https://id.tinkoff.ru/"], kind: "tinkoff-id"),
                environment: [:]))
        #expect(trailing.tokenEndpoint == "https://id.tinkoff.ru/auth/token")
    }

    @Test(arguments: [true, false])
    func answerWithoutARefreshTokenIsFine(rotating: Bool) async throws {
        try await Self.run(server: {
            $0.rotateRefreshTokens = rotating
            $0.omitRefreshTokenInResponse = true
        }) { fixture in
            if rotating {
                // A rotating answer always has one; script the "no offline access" answer instead.
                fixture.server.script(
                    .raw(
                        status: 200, headers: ["Content-Type": "application/json"],
                        body: #"{"access_token":"t.new","token_type":"Bearer","expires_in":1800}"#))
            }
            let payload = try await fixture.refresh(fixture.server.issue().refreshToken)
            #expect(payload.secrets.refreshToken == nil)
            #expect(payload.expiry == .after(seconds: rotating ? 1800 : 3600))
        }
    }

    @Test func limitExceededBacksOffForLong() async throws {
        try await Self.run { fixture in
            fixture.server.script(.error(status: 429, code: "limit_exceeded", description: "too many tokens"))
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == .transient)
            #expect(failure.code == "limit_exceeded")
            #expect(failure.retryAfter == ProviderErrorClassifier.limitExceededBackoff)
            #expect(failure.message == "too many tokens", "T-ID's error_message is the text")
        }
    }

    @Test func spentTokenIsInvalidGrantAndWrongSecretMisconfigured() async throws {
        try await Self.run { fixture in
            let issued = fixture.server.issue()
            _ = try await fixture.refresh(issued.refreshToken)
            let spent = try #require(await fixture.refreshFailure(issued.refreshToken))
            #expect(spent.kind == .invalidGrant)
            #expect(spent.code == "invalid_grant")
            fixture.server.update { $0.clientSecret = "a-secret-we-do-not-have" }
            let client = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(client.kind == .misconfigured)
            #expect(client.code == "invalid_client")
        }
    }

    @Test(arguments: [RevocationAnswer.emptyJSON, .plainOK])
    func revokeAcceptsEmptyJSONAndOK(answer: RevocationAnswer) async throws {
        try await Self.run(secret: "vault-secret", server: { $0.revocationAnswer = answer }) { fixture in
            let issued = fixture.server.issue()
            #expect(await fixture.revokeFailure(issued.refreshToken) == nil)
            let request = try #require(fixture.server.requests.last)
            #expect(request.uri == "/auth/revoke")
            #expect(request.headers["x-sso-no-adapter"] == "true")
            #expect(basicCredentials(request.headers["authorization"]) == "vault-client:vault-secret")
            #expect(request.formFields.map(\.name) == ["token", "token_type_hint"])
            #expect(request.form == ["token": issued.refreshToken, "token_type_hint": "refresh_token"])
            #expect(fixture.server.refreshTokenState(issued.refreshToken) == .revoked)
        }
    }

    @Test func revokeRefusalIsClassified() async throws {
        try await Self.run { fixture in
            fixture.server.scriptRevocation(.error(status: 503, code: "server_error", retryAfter: "7"))
            let failure = try #require(await fixture.revokeFailure("rt-x", hint: .accessToken))
            #expect(failure.kind == .transient)
            #expect(failure.retryAfter == 7)
        }
    }
}
