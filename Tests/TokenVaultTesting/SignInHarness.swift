import Foundation
import Testing

/// The Authlib authorization server (`AuthorizationServerProcess`) and a vault whose instance
/// `authlib` is configured by discovery alone: what every sign-in test starts from, on SQLite or
/// on a PostgreSQL vault shared by `nodes` daemons.
public enum SignInHarness {
    /// The redirect URI the instance and the server register (a loopback one: any port).
    public static let callback = "http://127.0.0.1/callback"

    /// `par`, `slowDown`, `deviceTokenDelay`, `deviceInterval`, `serverArguments`: the server's
    /// options; `instance`: the instance's options instead of a client secret sent
    /// `client_secret_basic` (the issuer and `client_id` are always set; `$SECRET` names the
    /// secret's file); `providers`: more instances; `webhooks`: a receiver every event goes to;
    /// `sections`: more top-level members of the config. No daemon is started.
    public static func make(
        par: Bool = false, slowDown: Int = 0, deviceTokenDelay: Double = 0, deviceInterval: Int = 1,
        serverArguments: [String] = [], instance: String? = nil, providers: String? = nil,
        webhooks: TestWebhookReceiver? = nil, sections: String? = nil,
        postgres: (server: TestPostgres, database: String)? = nil, nodes: Int = 1
    ) async throws -> (ResilienceHarness, AuthorizationServerProcess) {
        let directory = TemporaryDirectory("tokenvault-signin")
        let server = try AuthorizationServerProcess(
            directory: directory, redirectURIs: [callback], par: par, slowDown: slowDown,
            deviceTokenDelay: deviceTokenDelay, deviceInterval: deviceInterval, arguments: serverArguments)
        // In the server's directory, which lives as long as it does: a daemon started again reads it.
        let secret = server.directory.file("authlib.secret")
        writeFile(secret, Data("vault-secret".utf8), permissions: 0o600)
        let hookSecret = server.directory.file("hook.whsec")
        if webhooks != nil {
            #expect(try CommandRunner().run(["webhooks", "secret", hookSecret]).status == 0)
        }
        let hooks = webhooks.map {
            #", "webhooks": {"retry_base_seconds": 1, "endpoints": {"test": {"url": "\#($0.url)", "secret_file": "\#(hookSecret)"}}}"#
        }
        // A forced refresh is refused for a second after the sign-in asked the server. The
        // instance has only its issuer: the vault reads the server's RFC 8414 document.
        let harness = try await ResilienceHarness(
            lifetime: 3600, limits: "{}", refresh: "{}",
            providers: """
                "authlib": {"kind": "oauth2",
                    "issuer": "\(server.issuer)", "client_id": "vault-client", "redirect_uris": ["\(callback)"],
                    \((instance ?? #""client_secret_file": "$SECRET""#).replacingOccurrences(of: "$SECRET", with: secret))}
                """ + (providers.map { ", " + $0 } ?? ""),
            sections: #""limits": {"on_demand_refresh_seconds": 1}"# + (hooks ?? "")
                + (sections.map { ", " + $0 } ?? ""),
            postgres: postgres,
            nodes: nodes)
        return (harness, server)
    }
}
