import Foundation
import Logging
import ServiceLifecycle
import TokenVaultCore
import TokenVaultServer
import TokenVaultTesting

/// A real server on a real Unix socket over a real SQLite vault, run in-process.
final class TestServer: Sendable {
    let fixture: TestVault
    let socketPath: String
    let audit: AuditRecorder
    private let task: Task<Void, any Error>
    private let group: ServiceGroup

    init(policy: AccessPolicy? = nil, idleTimeoutSeconds: Int = 30, maximumBodySize: Int = 64 * 1024) async throws {
        fixture = try TestVault()
        socketPath = fixture.directory.file("run/tokenvault.sock")
        try SocketGuard.prepare(path: socketPath)
        let logger = Logger(label: "test-server")
        audit = AuditRecorder(store: fixture.database, interval: .milliseconds(50), logger: logger)
        let api = VaultAPI(
            vault: fixture.vault, admin: fixture.database,
            rotation: KeyRotation(vault: fixture.vault, keyring: fixture.keyring, terms: fixture.database),
            policy: policy ?? AccessPolicy(rules: [], daemonUID: getuid()), audit: audit,
            options: .init(
                providers: ["oauth2", "tinkoff-id"], maximumBodySize: maximumBodySize, version: "test",
                backupDirectory: fixture.directory.file("backups")))
        let (ready, readyContinuation) = AsyncStream.makeStream(of: Void.self)
        let application = VaultServer.application(
            api: api, socketPath: socketPath, idleTimeoutSeconds: idleTimeoutSeconds, logger: logger
        ) {
            readyContinuation.yield()
        }
        group = ServiceGroup(
            configuration: .init(
                services: [.init(service: audit), .init(service: application)], gracefulShutdownSignals: [],
                logger: logger))
        task = Task { [group] in try await group.run() }
        for await _ in ready { break }
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = await task.result
    }

    func request(_ method: String, _ target: String, body: String? = nil) async throws -> RawHTTPResponse {
        let socketPath = socketPath
        return try await offThePool { try UnixSocketHTTP.request(socketPath, method, target, body: body) }
    }

    func putBody(provider: String = "tinkoff-id", token: String, labels: String = "{}") -> String {
        "{\"provider\": \"\(provider)\", \"labels\": \(labels), \"token\": \(token)}"
    }
}
