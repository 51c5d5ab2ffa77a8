import Foundation
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

/// A loopback `TestOAuthServer` and a provider of any kind configured against it, for the
/// per-kind suites (T-ID, Sber ID, ESIA): the kind's own options are built by the test from
/// the running server and a private temporary directory.
struct KindFixture<Provider: ShutdownableProvider>: Sendable {
    let server: TestOAuthServer
    let provider: Provider
    let directory: TemporaryDirectory

    /// Runs `body` with a fresh server and provider, and shuts both down whatever happens.
    static func run(
        server configure: @Sendable (inout TestOAuthServer.Options) -> Void = { _ in },
        directory: TemporaryDirectory = TemporaryDirectory("tokenvault-kinds"),
        provider make: (TestOAuthServer, TemporaryDirectory) throws -> Provider,
        _ body: (KindFixture) async throws -> Void
    ) async throws {
        var serverOptions = TestOAuthServer.Options()
        configure(&serverOptions)
        let server = try await TestOAuthServer.start(serverOptions)
        let provider: Provider
        do {
            provider = try make(server, directory)
        } catch {
            await server.shutdown()
            throw error
        }
        let fixture = KindFixture(server: server, provider: provider, directory: directory)
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

    static var credential: CredentialID { try! CredentialID(namespace: "tests", name: "alice") }

    static func refreshRequest(_ refreshToken: String, scopes: [String] = []) -> RefreshRequest {
        RefreshRequest(credentialID: credential, refreshToken: SecretBytes(utf8: refreshToken), scopes: scopes)
    }

    static func exchangeRequest(
        code: String, verifier: String?, redirectURI: String = "app://callback", state: String? = nil
    ) -> CodeExchangeRequest {
        CodeExchangeRequest(
            code: SecretBytes(utf8: code), codeVerifier: verifier.map { SecretBytes(utf8: $0) },
            redirectURI: redirectURI,
            state: state, credentialID: credential)
    }

    func refresh(_ refreshToken: String) async throws -> TokenPayload {
        try await provider.refresh(Self.refreshRequest(refreshToken))
    }

    /// Refreshes and returns the failure, or nil when the refresh succeeded.
    func refreshFailure(_ refreshToken: String, scopes: [String] = []) async -> ProviderFailure? {
        do {
            _ = try await provider.refresh(Self.refreshRequest(refreshToken, scopes: scopes))
            return nil
        } catch {
            return error
        }
    }

    func exchangeFailure(_ request: CodeExchangeRequest) async -> ProviderFailure? {
        do {
            _ = try await provider.exchange(request)
            return nil
        } catch {
            return error
        }
    }

    func revokeFailure(_ token: String, hint: TokenHint = .refreshToken) async -> ProviderFailure? {
        do {
            try await provider.revoke(SecretBytes(utf8: token), hint: hint, call: nil)
            return nil
        } catch {
            return error
        }
    }

    /// Writes a secret file (mode 0600) into the fixture's directory and returns its path.
    static func secretFile(_ contents: String, in directory: TemporaryDirectory, name: String = "client.secret")
        -> String
    {
        let path = directory.file(name)
        ProviderTestSupport.write(contents + "\n", to: path, mode: 0o600)
        return path
    }
}

/// `Basic base64(id:secret)` decoded, form-decoding left to the caller.
func basicCredentials(_ header: String?) -> String? {
    guard let header, header.hasPrefix("Basic "),
        let data = Data(base64Encoded: String(header.dropFirst("Basic ".count)))
    else { return nil }
    return String(decoding: data, as: UTF8.self)
}
