import Foundation
import Testing
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

/// Kind `sber-id` against a `TestOAuthServer` speaking HTTPS and requiring a client certificate
/// from a test CA made by `TestPKI` (openssl), with Sber's gateway error shape.
@Suite struct SberIDProviderTests {
    typealias Fixture = KindFixture<SberIDProvider>

    static func sberServer(_ pki: TestPKI) -> @Sendable (inout TestOAuthServer.Options) -> Void {
        { options in
            options.tls = pki.serverTLS()
            options.clientAuthentication = .post
            options.errorShape = .sberGateway
            options.requiredHeaders = ["x-ibm-client-id": "vault-client"]
        }
    }

    static func options(_ server: TestOAuthServer, _ pki: TestPKI, _ directory: TemporaryDirectory)
        -> [String: JSONValue]
    {
        [
            "token_endpoint": .string(server.tokenURL), "client_id": "vault-client",
            "client_secret_file": .string(Fixture.secretFile("vault-secret", in: directory)),
            "client_certificate_file": .string(pki.clientPKCS12Path),
            "client_certificate_password_file": .string(pki.passwordPath), "ca_file": .string(pki.caPath),
        ]
    }

    static func run(
        server configure: @escaping @Sendable (inout TestOAuthServer.Options) -> Void = { _ in },
        options change: @escaping (inout [String: JSONValue], TestPKI) -> Void = { _, _ in },
        _ body: (Fixture) async throws -> Void
    ) async throws {
        let pki = try await TestPKI.shared()
        try await Fixture.run(
            server: { options in
                sberServer(pki)(&options)
                configure(&options)
            },
            provider: { server, directory in
                var options = options(server, pki, directory)
                change(&options, pki)
                return try SberIDProvider(
                    settings: ProviderTestSupport.settings(options, name: "sber-id", kind: "sber-id"), environment: [:])
            }, body)
    }

    static func isRequestID(_ value: String?) -> Bool {
        guard let value else { return false }
        return value.count == 32 && value.allSatisfy { "0123456789abcdef".contains($0) }
    }

    @Test func refreshOverMutualTLS() async throws {
        try await Self.run { fixture in
            #expect(fixture.server.baseURL.hasPrefix("https://"))
            let issued = fixture.server.issue(scopes: ["openid"])
            let payload = try await fixture.refresh(issued.refreshToken)
            let successor = try #require(payload.secrets.refreshToken?.revealString())
            _ = try await fixture.refresh(successor)

            let requests = fixture.server.requests
            #expect(requests.count == 2)
            let request = try #require(requests.first)
            #expect(request.method == "POST")
            #expect(request.path == "/token")
            #expect(request.headers["x-ibm-client-id"] == "vault-client")
            #expect(request.headers["accept"] == "application/json")
            #expect(request.headers["authorization"] == nil)
            #expect(Self.isRequestID(request.headers["rquid"]))
            #expect(requests[0].headers["rquid"] != requests[1].headers["rquid"], "a new rquid per request")
            #expect(request.formFields.map(\.name) == ["grant_type", "refresh_token", "client_id", "client_secret"])
            #expect(
                request.form == [
                    "grant_type": "refresh_token", "refresh_token": issued.refreshToken, "client_id": "vault-client",
                    "client_secret": "vault-secret",
                ])
            #expect(payload.scopes == ["openid"])
            #expect(!fixture.provider.supportsRevocation)
        }
    }

    /// Sber ID starts sign-ins once it has redirect URIs: its web page by default, no pushed
    /// requests, no `iss` promised.
    @Test func signInsStartAtSberIDsPageOnceRedirectURIsAreGiven() async throws {
        try await Self.run { fixture in
            do {
                _ = try await fixture.provider.authorizationServer()
                Issue.record("started without redirect_uris")
            } catch let failure as ProviderFailure {
                #expect(failure.code == .providerNotConfigured && failure.message.contains("redirect_uris"))
            }
        }
        try await Self.run(options: { options, _ in
            options["redirect_uris"] = .array([.string("ru.bank.app://sberid")])
        }) { fixture in
            let server = try await fixture.provider.authorizationServer()
            #expect(server.authorizationEndpoint == SberIDConfiguration.defaultAuthorizationEndpoint)
            #expect(server.redirectURIs == ["ru.bank.app://sberid"] && server.clientID == "vault-client")
            #expect(server.pushedAuthorizationRequestEndpoint == nil && server.issuer == nil && !server.sendsIssuer)
            #expect(fixture.server.requests.isEmpty, "nothing is sent to start a sign-in")
        }
    }

    @Test func refreshGrantTypeIsConfigurable() async throws {
        try await Self.run(options: { options, _ in options["refresh_grant_type"] = "urn:sber:refresh" }) { fixture in
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(fixture.server.requests.last?.form["grant_type"] == "urn:sber:refresh")
            // The test server knows only the standard grant and says so in the gateway's shape.
            #expect(failure.kind == .misconfigured)
        }
    }

    @Test func clientCertificateFromAnotherCAIsRefusedClearly() async throws {
        try await Self.run(options: { options, pki in
            options["client_certificate_file"] = .string(pki.foreignClientPKCS12Path)
        }) { fixture in
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == .transient, "\(failure)")
            #expect(failure.code == "tls_error")
            #expect(failure.message.contains("refused the client certificate"), "\(failure.message)")
            #expect(fixture.server.requests.isEmpty, "nothing reached the token endpoint")
        }
    }

    @Test func noClientCertificateIsRefusedClearly() async throws {
        // Kind sber-id always presents its certificate; an oauth2 instance pointed at the same
        // mutual-TLS endpoint shows what a missing one looks like.
        let pki = try await TestPKI.shared()
        var serverOptions = TestOAuthServer.Options()
        Self.sberServer(pki)(&serverOptions)
        let server = try await TestOAuthServer.start(serverOptions)
        let provider = try OAuth2Provider(
            settings: ProviderTestSupport.settings([
                "token_endpoint": .string(server.tokenURL), "client_id": "vault-client", "ca_file": .string(pki.caPath),
            ]), environment: [:])
        var failure: ProviderFailure?
        do {
            _ = try await provider.refresh(OAuth2ProviderFixture.refreshRequest(server.issue().refreshToken))
        } catch {
            failure = error
        }
        try await provider.shutdown()
        let requests = server.requests
        await server.shutdown()
        let refused = try #require(failure)
        #expect(refused.kind == .transient, "\(refused)")
        #expect(refused.code == "tls_error")
        #expect(refused.message.contains("client certificate"), "\(refused.message)")
        #expect(requests.isEmpty)
    }

    @Test func untrustedServerCertificateSaysSetCAFile() async throws {
        try await Self.run(options: { options, _ in options["ca_file"] = nil }) { fixture in
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == .transient)
            #expect(failure.code == "tls_error")
            #expect(failure.message.contains("ca_file"), "\(failure.message)")
        }
    }

    @Test func compactJWTBodyIsRefusedNotDecoded() async throws {
        try await Self.run { fixture in
            fixture.server.script(.compactJWTBody)
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == .unknownOutcome)
            #expect(failure.code == "malformed_response")
            #expect(failure.message.contains("answered a JWT, not a token response"), "\(failure.message)")
        }
    }

    @Test func gatewayErrorsAreClassified() async throws {
        try await Self.run { fixture in
            let issued = fixture.server.issue()
            _ = try await fixture.refresh(issued.refreshToken)
            let spent = try #require(await fixture.refreshFailure(issued.refreshToken))
            #expect(spent.kind == .invalidGrant, "\(spent)")

            fixture.server.update { $0.clientSecret = "rotated-at-sber" }
            let client = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(client.kind == .misconfigured)
            #expect(client.code == "http_401")

            fixture.server.script(.error(status: 503, code: "server_error", retryAfter: "12"))
            let outage = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(outage.kind == .transient)
            #expect(outage.retryAfter == 12)
        }
    }

    @Test func noRevocationEndpoint() async throws {
        try await Self.run { fixture in
            let failure = try #require(await fixture.revokeFailure(fixture.server.issue().refreshToken))
            #expect(failure.code == "revocation_not_supported")
            #expect(fixture.server.requests.isEmpty)
        }
    }
}
