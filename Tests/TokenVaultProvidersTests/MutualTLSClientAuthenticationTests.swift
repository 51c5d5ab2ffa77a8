import Foundation
import Testing
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

/// RFC 8705 client authentication for an `oauth2` instance, on the certificate handling the
/// `sber-id` kind has: a loopback server that requires a client certificate from the test CA
/// takes the instance's, with only `client_id` in the body; configured without a certificate,
/// the method is refused at start-up.
@Suite struct MutualTLSClientAuthenticationTests {
    @Test(arguments: ["tls_client_auth", "self_signed_tls_client_auth"])
    func aGenericInstanceAuthenticatesWithItsCertificate(method: String) async throws {
        let pki = try await TestPKI.shared()
        var serverOptions = TestOAuthServer.Options()
        serverOptions.tls = pki.serverTLS()
        serverOptions.clientAuthentication = .none
        let server = try await TestOAuthServer.start(serverOptions)
        let provider = try OAuth2Provider(
            settings: ProviderTestSupport.settings([
                "token_endpoint": .string(server.tokenURL), "client_id": .string(serverOptions.clientID),
                "client_authentication": .string(method), "client_certificate_file": .string(pki.clientPKCS12Path),
                "client_certificate_password_file": .string(pki.passwordPath), "ca_file": .string(pki.caPath),
            ]), environment: [:])
        let outcome: Result<TokenPayload, ProviderFailure>
        do throws(ProviderFailure) {
            outcome = .success(
                try await provider.refresh(OAuth2ProviderFixture.refreshRequest(server.issue().refreshToken)))
        } catch {
            outcome = .failure(error)
        }
        try await provider.shutdown()
        let requests = server.requests
        await server.shutdown()
        let payload = try outcome.get()
        #expect(payload.secrets.refreshToken != nil)
        let request = try #require(requests.first)
        #expect(request.formFields.map(\.name) == ["grant_type", "refresh_token", "client_id"])
        #expect(request.headers["authorization"] == nil)
    }

    @Test func theMethodNeedsACertificateAndNoSecret() async throws {
        let pki = try await TestPKI.shared()
        let directory = TemporaryDirectory("tokenvault-mtls")
        let base: [String: JSONValue] = [
            "token_endpoint": "https://idp.example/token", "client_id": "vault",
            "client_authentication": "tls_client_auth",
        ]
        let missing = await ProviderTestSupport.configurationError(base)
        #expect(missing?.key == "providers.acme.client_authentication")
        #expect(missing?.problem.contains("client_certificate_file") == true, "\(String(describing: missing))")
        var withSecret = base
        withSecret["client_certificate_file"] = .string(pki.clientPKCS12Path)
        withSecret["client_certificate_password_file"] = .string(pki.passwordPath)
        withSecret["client_secret_file"] = .string(KindFixture<OAuth2Provider>.secretFile("s", in: directory))
        let both = await ProviderTestSupport.configurationError(withSecret)
        #expect(both?.key == "providers.acme.client_authentication")
    }
}
