import Foundation
import Logging
import Testing
import TokenVaultCore
import TokenVaultEngine
import TokenVaultProviders
import TokenVaultSystem
import TokenVaultTesting

@testable import TokenVaultServer

/// SIGHUP's provider work, in-process, with the real pieces the daemon wires: the API, the
/// refresh engine, `ProviderInstances` building instances from the file, loopback OAuth servers.
extension ConfigurationReloadTests {
    /// A daemon's pieces over one config file, for one test.
    struct ProviderRig {
        let server: TestServer
        let engine: RefreshEngine
        let instances: ProviderInstances
        let reload: ConfigurationReload
        let directory = TemporaryDirectory("tokenvault-provider-reload")
        let file: String
        let secretFile: String

        /// Starts with one oauth2 instance, `name`, at `provider`.
        init(_ name: String, at provider: TestOAuthServer) async throws {
            file = directory.file("config.json")
            secretFile = directory.file("client.secret")
            try Data("vault-secret\n".utf8).write(to: URL(fileURLWithPath: secretFile))
            chmod(secretFile, 0o600)
            try Self.write(file, [Self.instance(name, provider, secretFile: secretFile)])
            let settings = try DaemonConfiguration.load(path: file, catalog: ProviderKinds())
            let instances = ProviderInstances(environment: [:])
            self.instances = instances
            let table = try await instances.build(settings.providers, after: .empty)
            let engineBox = EngineBox()
            server = try await TestServer(makeEngine: { fixture in
                let engine = RefreshEngine(vault: fixture.vault, table: table, logger: Logger(label: "reload-test"))
                engineBox.engine = engine
                return engine
            })
            engine = engineBox.engine!
            reload = ConfigurationReload(
                running: settings,
                load: { [file] in try DaemonConfiguration.load(path: file, catalog: ProviderKinds()) }, file: file,
                api: server.api, levels: LogLevelSwitch(.info), notifier: SystemdNotifier(address: nil),
                status: { "test" }, providers: .init(builder: instances, routing: engine),
                logger: Logger(label: "reload-test"))
        }

        /// A `providers` section entry of kind oauth2 pointing at `server`.
        static func instance(_ name: String, _ server: TestOAuthServer, secretFile: String) -> String {
            """
            "\(name)": {"kind": "oauth2", "token_endpoint": "\(server.tokenURL)", "client_id": "vault-client",
                        "client_secret_file": "\(secretFile)"}
            """
        }

        func instance(_ name: String, _ server: TestOAuthServer, secretFile: String? = nil) -> String {
            Self.instance(name, server, secretFile: secretFile ?? self.secretFile)
        }

        static func write(_ file: String, _ instances: [String]) throws {
            try Data(#"{"providers": {\#(instances.joined(separator: ", "))}}"#.utf8)
                .write(to: URL(fileURLWithPath: file))
        }

        func write(_ instances: String...) throws { try Self.write(file, instances) }

        /// Stores tokens `issuer` issued as credential `ns/name` of instance `provider`.
        func put(_ name: String, provider: String, issuer: TestOAuthServer) async throws -> Int {
            let body = server.putBody(provider: provider, token: issuer.issue().responseJSON)
            return try await server.request("PUT", "/v1/credentials/ns/\(name)", body: body).status
        }

        /// Stops the server and closes the instances' HTTP clients (as the daemon does on its way out).
        func stop() async {
            await server.stop()
            await instances.release(Array(engine.providerTable.providers.values))
        }

        func refresh(_ name: String) async throws -> RefreshOutcome {
            try await engine.refresh(try CredentialID("ns/\(name)"), reason: .forced)
        }
    }

    @Test func reloadAddsRemovesAndRepointsProviderInstances() async throws {
        let first = try await TestOAuthServer.start()
        let second = try await TestOAuthServer.start()
        defer {
            Task {
                await first.shutdown()
                await second.shutdown()
            }
        }
        let rig = try await ProviderRig("acme", at: first)
        try await withStopping(rig, stop: { await $0.stop() }) { rig in
            #expect(try await rig.put("a", provider: "acme", issuer: first) == 201)
            #expect(try await rig.put("b", provider: "beta", issuer: first) == 422, "beta is not configured yet")

            // Added: a PUT naming it is accepted and its credential refreshes at its endpoint.
            try rig.write(rig.instance("acme", first), rig.instance("beta", first))
            #expect(await rig.reload.reload() == .init(refusal: nil, needsRestart: []))
            #expect(try await rig.put("b", provider: "beta", issuer: first) == 201)
            let before = first.tokenRequestCount
            guard case .refreshed = try await rig.refresh("b") else {
                Issue.record("the added instance's credential did not refresh")
                return
            }
            #expect(first.tokenRequestCount == before + 1)

            // Re-pointed: the next refresh goes to the new token endpoint.
            try rig.write(rig.instance("acme", second), rig.instance("beta", first))
            #expect(await rig.reload.reload() == .init(refusal: nil, needsRestart: []))
            let (firstBefore, secondBefore) = (first.tokenRequestCount, second.tokenRequestCount)
            _ = try await rig.refresh("a")
            #expect(second.tokenRequestCount == secondBefore + 1, "the re-pointed instance calls its new endpoint")
            #expect(first.tokenRequestCount == firstBefore)

            // Removed: a PUT naming it is refused; its credential fails refresh, classified.
            try rig.write(rig.instance("acme", second))
            #expect(await rig.reload.reload() == .init(refusal: nil, needsRestart: []))
            #expect(try await rig.put("c", provider: "beta", issuer: first) == 422)
            guard case .failed(let failure, _) = try await rig.refresh("b") else {
                Issue.record("a credential of a removed instance did not fail")
                return
            }
            #expect(failure.code == "provider_not_configured" && failure.kind == .misconfigured)
            #expect(first.tokenRequestCount == firstBefore, "the removed instance is not called")
            let health = try await rig.server.request("GET", "/v1/health")
            #expect(health.status == 200 && !health.text.contains("beta"))
        }
    }

    @Test func anInstanceThatCannotBeBuiltRefusesTheFileAndTheOldOneKeepsWorking() async throws {
        let provider = try await TestOAuthServer.start()
        let elsewhere = try await TestOAuthServer.start()
        defer {
            Task {
                await provider.shutdown()
                await elsewhere.shutdown()
            }
        }
        let rig = try await ProviderRig("acme", at: provider)
        try await withStopping(rig, stop: { await $0.stop() }) { rig in
            #expect(try await rig.put("a", provider: "acme", issuer: provider) == 201)

            // acme re-pointed and a new instance, but the new one's secret file does not exist.
            let missing = rig.file + ".missing-secret"
            try rig.write(rig.instance("acme", elsewhere), rig.instance("gamma", provider, secretFile: missing))
            let refused = await rig.reload.reload()
            #expect(refused.refusal?.contains(rig.file) == true, "\(refused)")
            #expect(refused.refusal?.contains("providers.gamma.client_secret_file") == true, "\(refused)")
            #expect(try await rig.put("g", provider: "gamma", issuer: provider) == 422)
            let before = provider.tokenRequestCount
            guard case .refreshed = try await rig.refresh("a") else {
                Issue.record("the running instance stopped working")
                return
            }
            #expect(provider.tokenRequestCount == before + 1 && elsewhere.tokenRequestCount == 0)

            // A URL that is not allowed (plain HTTP off loopback) is refused the same way.
            try Data(
                #"{"providers": {"acme": {"kind": "oauth2", "token_endpoint": "http://id.example/token", "client_id": "v"}}}"#
                    .utf8
            ).write(to: URL(fileURLWithPath: rig.file))
            #expect(await rig.reload.reload().refusal?.contains("providers.acme.token_endpoint") == true)
            guard case .refreshed = try await rig.refresh("a") else {
                Issue.record("the running instance stopped working after a second refusal")
                return
            }
        }
    }
}

/// Hands the engine made inside `TestServer`'s initialiser back to the test.
private final class EngineBox: @unchecked Sendable {
    var engine: RefreshEngine?
}
