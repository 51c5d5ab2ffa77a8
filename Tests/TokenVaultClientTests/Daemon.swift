import Foundation
import TokenVaultClient
import TokenVaultCore
import TokenVaultTesting

/// The in-process test server (`TestServer`, the one the server tests use) with a client
/// connected to it. The test process's uid is the daemon's, so every call is authorised as admin.
struct Daemon: Sendable {
    let server: TestServer
    let client: TokenVaultClient
    var fixture: TestVault { server.fixture }
    var socketPath: String { server.socketPath }

    static let providers: Set<String> = ["oauth2", "tinkoff-id", "ebs"]

    /// Starts a server, runs `body`, then shuts the client and the server down, in that order
    /// and waited for, however `body` ends.
    static func run<Result: Sendable>(_ body: (Daemon) async throws -> Result) async throws -> Result {
        try await withStopping(try await TestServer(providers: providers), stop: { await $0.stop() }) { server in
            let daemon = Daemon(server: server, client: TokenVaultClient(socketPath: server.socketPath))
            let outcome: Swift.Result<Result, any Error>
            do {
                outcome = .success(try await body(daemon))
            } catch {
                outcome = .failure(error)
            }
            try await daemon.client.shutdown()
            return try outcome.get()
        }
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
