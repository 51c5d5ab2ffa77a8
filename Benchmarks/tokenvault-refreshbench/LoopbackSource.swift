import Foundation
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

/// The real thing: `OAuth2Provider` (what `tokenvault serve` builds for a configured
/// instance) against `TestOAuthServer` on 127.0.0.1, rotating refresh tokens with reuse
/// detection on, client `vault-client` / `vault-secret` with `client_secret_basic`.
final class LoopbackSource: TokenSource {
    let name: String
    let server: TestOAuthServer
    let provider: OAuth2Provider
    let settings: ProviderSettings
    /// Set for the connection-reuse experiment; then the engine calls it instead of `provider`.
    let keepAlive: KeepAliveProvider?
    /// The test CA and server certificate of an HTTPS run, kept as long as the server runs (their
    /// directory goes with them).
    let pki: TestPKI?
    var tokenProvider: any TokenProvider { keepAlive ?? provider }

    /// `lifetime`: the access-token lifetime (whole seconds) the server grants on refresh.
    /// With `keepAlive`, refreshes go through `KeepAliveProvider` (experiment) instead.
    /// `transport`: how the provider's requests leave (the courier's, as in the daemon; direct
    /// when nil).
    init(
        lifetime: Int, concurrency: Int, directory: String, planner: RefreshPlanner, keepAlive: Bool = false,
        transport: TransportMaker? = nil, tls: TestPKI? = nil, keepAliveSeconds: Double? = nil
    ) async throws {
        var options = TestOAuthServer.Options()
        options.clientID = "vault-client"
        options.clientSecret = "vault-secret"
        options.clientAuthentication = .basic
        options.rotateRefreshTokens = true
        options.reuseDetection = true
        options.accessTokenLifetime = Double(lifetime)
        options.tls = tls?.serverTLS(requireClientCertificate: false)
        pki = tls
        server = try await TestOAuthServer.start(options)
        var settings = try Self.providerSettings(
            server: server, directory: directory, planner: planner, concurrency: concurrency)
        if let tls { settings.options["ca_file"] = .string(tls.caPath) }
        if let keepAliveSeconds { settings.options["keep_alive_seconds"] = .number(keepAliveSeconds) }
        self.settings = settings
        provider = try OAuth2Provider(
            settings: settings, environment: [:],
            transport: transport.map { make in
                make(settings, TransportSettings(maximumConnections: concurrency))
            })
        self.keepAlive = keepAlive ? KeepAliveProvider(port: server.port, path: options.tokenPath) : nil
        name =
            keepAlive
            ? "loopback test provider via KeepAliveProvider (EXPERIMENT: kept-alive connections, bare NIO client)"
            : transport == nil
                ? "loopback test provider (TestOAuthServer) via OAuth2Provider, sent directly (no courier: a comparison)"
                : "loopback test provider (TestOAuthServer) via OAuth2Provider through the courier, as the daemon runs"
    }

    /// Provider `idp` at the server's token endpoint, the client secret in a 0600 file in
    /// `directory`, `client_secret_basic`, and limits that never hold the engine back.
    static func providerSettings(
        server: TestOAuthServer, directory: String, planner: RefreshPlanner = RefreshPlanner(), concurrency: Int
    ) throws -> ProviderSettings {
        let secretFile = directory + "/client-secret"
        guard
            FileManager.default.createFile(
                atPath: secretFile, contents: Data("vault-secret".utf8), attributes: [.posixPermissions: 0o600])
        else { throw BenchError("cannot write \(secretFile)") }
        return ProviderSettings(
            name: RefreshRig.providerName, kind: "oauth2", planner: planner,
            limits: RefreshRig.generousLimits(concurrency: concurrency),
            options: [
                "token_endpoint": .string(server.tokenURL), "client_id": .string("vault-client"),
                "client_secret_file": .string(secretFile), "client_authentication": .string("client_secret_basic"),
            ])
    }

    func issue(lifetime: Double) -> (accessToken: String, refreshToken: String) {
        let issued = server.issue(lifetime: lifetime)
        return (issued.accessToken, issued.refreshToken)
    }

    func isLive(_ refreshToken: String) -> Bool {
        if case .valid = server.refreshTokenState(refreshToken) { return true }
        return false
    }

    var successfulRefreshes: Int { server.successfulRefreshes }
    var refreshTokensPresentedTwice: Int { server.refreshTokensPresentedTwice.count }
    var revokedFamilies: Int { server.revokedFamilies }

    func shutdown() async {
        await keepAlive?.shutdown()
        try? await provider.shutdown()
        await server.shutdown()
    }
}
