import Foundation
import Testing
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// SIGHUP with the built daemon: a provider instance added to the file is served at once, its
/// refreshes going out through the courier (which learns the instance at the reload), and one
/// that cannot be built is refused with the file and key while the running ones keep working.
@Suite(.serialized) struct ProviderReloadTests {
    let directory = TemporaryDirectory("tokenvault-provider-reload")
    let cli = CommandRunner()
    var dataDir: String { directory.file("data") }
    var socket: String { directory.file("tokenvault.sock") }
    var configPath: String { directory.file("config.json") }
    var secretFile: String { directory.file("client.secret") }

    init() throws {
        _ = try cli.run(["init", "--data-dir", dataDir])
        writeFile(secretFile, Data("vault-secret".utf8), permissions: 0o600)
    }

    func instance(_ name: String, _ server: TestOAuthServer, secretFile: String? = nil) -> String {
        """
        "\(name)": {"kind": "oauth2", "token_endpoint": "\(server.tokenURL)", "client_id": "vault-client",
                    "client_secret_file": "\(secretFile ?? self.secretFile)", "timeout_seconds": 5}
        """
    }

    func write(_ instances: String...) {
        writeFile(configPath, Data(#"{"providers": {\#(instances.joined(separator: ", "))}}"#.utf8))
    }

    func put(_ name: String, provider: String, tokens: IssuedTokens) throws -> Int {
        let body = #"{"provider": "\#(provider)", "token": \#(tokens.responseJSON)}"#
        return try UnixSocketHTTP.request(socket, "PUT", "/v1/credentials/ns/\(name)", body: body).status
    }

    /// Sends SIGHUP and waits for the reload's log line (the `n`th reload of this daemon).
    func reload(_ daemon: DaemonProcess, count: Int) async throws -> String {
        #expect(try await daemon.reload(count: count), "reload \(count) not logged: \(daemon.log)")
        return daemon.log
    }

    @Test func anInstanceAddedBySIGHUPRefreshesThroughTheCourier() async throws {
        let first = try await TestOAuthServer.start()
        let added = try await TestOAuthServer.start()
        defer {
            Task {
                await first.shutdown()
                await added.shutdown()
            }
        }
        write(instance("idp", first))
        let daemon = try DaemonProcess(
            arguments: ["--data-dir", dataDir, "--config", configPath], socketPath: socket,
            logDirectory: directory.path, environment: ["TOKENVAULT_LOG_LEVEL": "info"])
        defer { daemon.terminate() }
        #expect(try put("a", provider: "idp", tokens: first.issue()) == 201)
        #expect(try put("b", provider: "extra", tokens: added.issue()) == 422)

        write(instance("idp", first), instance("extra", added))
        let log = try await reload(daemon, count: 1)
        #expect(log.contains("tokenvault.provider.added=extra"), "\(log)")
        #expect(!log.contains("only a restart applies"), "\(log)")
        #expect(try put("b", provider: "extra", tokens: added.issue(lifetime: 5)) == 201)
        // A token read asking for more than the stored token's 5 s refreshes it first.
        let refreshed = try UnixSocketHTTP.request(socket, "GET", "/v1/credentials/ns/b/token?min_ttl=60")
        #expect(refreshed.status == 200, "\(refreshed.text)")
        #expect(added.successfulRefreshes == 1, "the new instance's endpoint answered the refresh")
        #expect(first.tokenRequestCount == 0)
        let health = try UnixSocketHTTP.request(socket, "GET", "/v1/health").json()
        let courier = health["courier"] as? [String: Any]
        #expect(courier?["state"] as? String == "up" && courier?["restarts"] as? Int == 0, "learnt, not restarted")
        #expect((health["providers"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["extra", "idp"])

        // An instance whose secret file does not exist: the whole file is refused, named.
        write(instance("idp", first), instance("extra", added, secretFile: directory.file("missing.secret")))
        let refusedLog = try await reload(daemon, count: 2)
        #expect(refusedLog.contains("configuration reload refused"), "\(refusedLog)")
        #expect(refusedLog.contains("\(configPath): providers.extra.client_secret_file"), "\(refusedLog)")
        #expect(try put("c", provider: "extra", tokens: added.issue(lifetime: 5)) == 201)
        let again = try UnixSocketHTTP.request(socket, "GET", "/v1/credentials/ns/c/token?min_ttl=60")
        #expect(again.status == 200 && added.successfulRefreshes == 2, "the running instance still refreshes")

        #expect(daemon.terminate() == 0)
        #expect(!daemon.log.contains("vault-secret"))
        #expect(ResilienceHarness.leakedTokens(in: daemon.log).isEmpty, "tokens in the daemon log")
    }
}
