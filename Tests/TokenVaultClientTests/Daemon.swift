import Foundation
import Logging
import ServiceLifecycle
import TokenVaultClient
import TokenVaultCore
import TokenVaultServer
import TokenVaultTesting

/// A real daemon in this process (a vault on a temporary SQLite file, the HTTP API on a Unix
/// socket in the same directory) and a client connected to it. The test process's uid is the
/// daemon's, so every call is authorised as admin.
struct Daemon: Sendable {
    let fixture: TestVault
    let socketPath: String
    let client: TokenVaultClient

    static let providers: Set<String> = ["oauth2", "tinkoff-id", "ebs"]

    enum StartError: Error { case serverDidNotStart }

    /// Starts a daemon, runs `body`, then shuts client and daemon down (also when `body` throws).
    static func run<Result: Sendable>(_ body: (Daemon) async throws -> Result) async throws -> Result {
        let fixture = try TestVault()
        let socketPath = fixture.directory.file("tokenvault.sock")
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let audit = AuditRecorder(vault: fixture.vault, logger: logger)
        let api = VaultAPI(
            vault: fixture.vault, admin: fixture.database,
            rotation: KeyRotation(vault: fixture.vault, keyring: fixture.keyring, terms: fixture.database),
            policy: AccessPolicy(rules: [], daemonUID: getuid()), audit: audit,
            options: .init(providers: providers, version: "test", backupDirectory: fixture.directory.file("backups")))
        let (running, signal) = AsyncStream<Void>.makeStream()
        let app = VaultServer.application(
            api: api, listener: .path(socketPath), idleTimeoutSeconds: 30, logger: logger,
            onRunning: { signal.yield() })
        let group = ServiceGroup(services: [app, audit], logger: logger)
        let server = Task {
            defer { signal.finish() }
            try await group.run()
        }
        var started = running.makeAsyncIterator()
        guard await started.next() != nil else {
            try await server.value  // the start-up error, if there was one
            throw StartError.serverDidNotStart
        }

        let daemon = Daemon(fixture: fixture, socketPath: socketPath, client: TokenVaultClient(socketPath: socketPath))
        let result: Result
        do {
            result = try await body(daemon)
        } catch {
            try? await daemon.client.shutdown()
            await group.triggerGracefulShutdown()
            try? await server.value
            throw error
        }
        try await daemon.client.shutdown()
        await group.triggerGracefulShutdown()
        try await server.value
        return result
    }
}

/// Token payloads as raw JSON, with the secret values they carry.
enum Payload {
    static func oauth(_ marker: String = UUID().uuidString) -> (data: Data, access: String, idToken: String) {
        let sample = SamplePayloads.oauth(marker)
        return (Data(sample.json.utf8), sample.tokens[0], sample.tokens[2])
    }

    static func tinkoff(_ marker: String = UUID().uuidString) -> (data: Data, access: String) {
        let sample = SamplePayloads.tinkoff(marker)
        return (Data(sample.json.utf8), sample.tokens[0])
    }
}
