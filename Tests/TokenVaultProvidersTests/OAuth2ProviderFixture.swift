import Foundation
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

/// A loopback `TestOAuthServer` and an `OAuth2Provider` configured against it. The provider's
/// options mirror the server's client registration unless a test overrides them.
struct OAuth2ProviderFixture: Sendable {
    let server: TestOAuthServer
    let provider: OAuth2Provider
    let directory: TemporaryDirectory

    /// Runs `body` with a fresh server and provider, and shuts both down whatever happens.
    static func run(
        server configure: @Sendable (inout TestOAuthServer.Options) -> Void = { _ in },
        options overrides: @Sendable (TestOAuthServer, TemporaryDirectory) -> [String: JSONValue] = { _, _ in [:] },
        _ body: (OAuth2ProviderFixture) async throws -> Void
    ) async throws {
        var serverOptions = TestOAuthServer.Options()
        configure(&serverOptions)
        let server = try await TestOAuthServer.start(serverOptions)
        let directory = TemporaryDirectory("tokenvault-providers")
        let provider: OAuth2Provider
        do {
            var options: [String: JSONValue] = [
                "token_endpoint": .string(server.tokenURL), "revocation_endpoint": .string(server.revocationURL),
                "client_id": .string(serverOptions.clientID),
            ]
            switch serverOptions.clientAuthentication {
            case .basic: options["client_authentication"] = "client_secret_basic"
            case .post: options["client_authentication"] = "client_secret_post"
            case .none: options["client_authentication"] = "none"
            }
            if let secret = serverOptions.clientSecret, serverOptions.clientAuthentication != .none {
                let path = directory.file("client.secret")
                ProviderTestSupport.write(secret + "\n", to: path, mode: 0o600)
                options["client_secret_file"] = .string(path)
            }
            for (key, value) in overrides(server, directory) {
                if value == .null { options[key] = nil } else { options[key] = value }
            }
            provider = try OAuth2Provider(settings: ProviderTestSupport.settings(options), environment: [:])
        } catch {
            await server.shutdown()
            throw error
        }
        let fixture = OAuth2ProviderFixture(server: server, provider: provider, directory: directory)
        do {
            try await body(fixture)
        } catch {
            await fixture.close()
            throw error
        }
        await fixture.close()
    }

    func close() async {
        try? await provider.shutdown()
        await server.shutdown()
    }

    static func request(_ refreshToken: String, scopes: [String] = []) -> RefreshRequest {
        RefreshRequest(
            credentialID: try! CredentialID(namespace: "tests", name: "alice"),
            refreshToken: SecretBytes(utf8: refreshToken), scopes: scopes)
    }

    /// Refreshes and returns the failure, or nil when the refresh succeeded.
    func refreshFailure(_ refreshToken: String, scopes: [String] = []) async -> ProviderFailure? {
        do {
            _ = try await provider.refresh(Self.request(refreshToken, scopes: scopes))
            return nil
        } catch {
            return error
        }
    }

    func revokeFailure(_ token: String, hint: TokenHint = .refreshToken) async -> ProviderFailure? {
        do {
            try await provider.revoke(SecretBytes(utf8: token), hint: hint)
            return nil
        } catch {
            return error
        }
    }
}
