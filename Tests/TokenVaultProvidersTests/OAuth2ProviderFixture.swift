import Foundation
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

/// `KindFixture` for kind `oauth2`: a loopback `TestOAuthServer` and an `OAuth2Provider`
/// configured against it. The provider's options mirror the server's client registration
/// unless a test overrides them (a `.null` override removes an option).
typealias OAuth2ProviderFixture = KindFixture<OAuth2Provider>

extension KindFixture where Provider == OAuth2Provider {
    /// Runs `body` with a fresh server and provider, and shuts both down whatever happens.
    static func run(
        server configure: @Sendable (inout TestOAuthServer.Options) -> Void = { _ in },
        options overrides: @Sendable (TestOAuthServer, TemporaryDirectory) -> [String: JSONValue] = { _, _ in [:] },
        _ body: (KindFixture) async throws -> Void
    ) async throws {
        let make: (TestOAuthServer, TemporaryDirectory) throws -> OAuth2Provider = { server, directory in
            let registration = server.options
            var options: [String: JSONValue] = [
                "token_endpoint": .string(server.tokenURL), "revocation_endpoint": .string(server.revocationURL),
                "client_id": .string(registration.clientID),
            ]
            switch registration.clientAuthentication {
            case .basic: options["client_authentication"] = "client_secret_basic"
            case .post: options["client_authentication"] = "client_secret_post"
            case .none: options["client_authentication"] = "none"
            }
            if let secret = registration.clientSecret, registration.clientAuthentication != .none {
                options["client_secret_file"] = .string(secretFile(secret, in: directory))
            }
            for (key, value) in overrides(server, directory) {
                if value == .null { options[key] = nil } else { options[key] = value }
            }
            return try OAuth2Provider(settings: ProviderTestSupport.settings(options), environment: [:])
        }
        try await run(server: configure, directory: TemporaryDirectory("tokenvault-providers"), provider: make, body)
    }
}
