import Foundation
import Testing
import TokenVaultClient
import TokenVaultTesting

/// How refusals and failures reach the caller.
@Suite("Errors")
struct ErrorTests {
    @Test func invalidPayloadNamesTheField() async throws {
        try await Daemon.run { daemon in
            let error = await #expect(throws: TokenVaultClientError.self) {
                try await daemon.client.put(
                    "payments/alice", provider: "oauth2",
                    token: Data(#"{"access_token": "secret-x", "expires_in": -5}"#.utf8))
            }
            #expect(error?.status == 400)
            #expect(error?.code == "invalid_field")
            guard case .problem(let problem)? = error else {
                Issue.record("expected a problem, got \(String(describing: error))")
                return
            }
            #expect(problem.field == "token.expires_in")
            #expect(error.map { !"\($0)".contains("secret-x") } == true)
        }
    }

    @Test func malformedTokenJSONIsInvalidPayload() async throws {
        try await Daemon.run { daemon in
            let error = await #expect(throws: TokenVaultClientError.self) {
                try await daemon.client.put(
                    "payments/alice", provider: "oauth2", token: Data(#"{"access_token": }"#.utf8))
            }
            #expect(error?.status == 400)
            #expect(error?.code == "invalid_payload")
        }
    }

    @Test func unknownProviderIs422() async throws {
        try await Daemon.run { daemon in
            let error = await #expect(throws: TokenVaultClientError.self) {
                try await daemon.client.put("payments/alice", provider: "acme-id", token: Payload.oauth().data)
            }
            #expect(error?.status == 422)
            #expect(error?.code == "unknown_provider")
            // Nothing was stored.
            let missing = await #expect(throws: TokenVaultClientError.self) {
                try await daemon.client.metadata("payments/alice")
            }
            #expect(missing?.code == "credential_not_found")
        }
    }

    @Test func idsTheDaemonRefusesAreInvalidCredentialID() async throws {
        try await Daemon.run { daemon in
            for id in ["-bad/alice", "payments/al ice", "pay%ments/alice"] {
                let error = await #expect(throws: TokenVaultClientError.self) {
                    try await daemon.client.metadata(id)
                }
                #expect(error?.code == "invalid_credential_id", "\(id)")
                #expect(error?.status == 400, "\(id)")
            }
        }
    }

    @Test func queryValuesOutOfRangeAreInvalidField() async throws {
        try await Daemon.run { daemon in
            let error = await #expect(throws: TokenVaultClientError.self) {
                try await daemon.client.list(limit: 0)
            }
            #expect(error?.code == "invalid_field")
            guard case .problem(let problem)? = error else { return }
            #expect(problem.field == "limit")
            let badCursor = await #expect(throws: TokenVaultClientError.self) {
                try await daemon.client.list(cursor: "not a cursor&limit=1")
            }
            #expect(badCursor?.code == "invalid_field")
        }
    }

    @Test func idsThatAreNotNamespaceSlashNameAreRefusedLocally() async throws {
        // No daemon: the client must refuse before connecting.
        try await TokenVaultClient.withClient(socketPath: "/nonexistent/tokenvault.sock") { client in
            for id in ["alice", "a/b/token", "/alice", "payments/", "payments/..", "./x", ""] {
                let error = await #expect(throws: TokenVaultClientError.self) {
                    try await client.token(id)
                }
                #expect(error == .invalidCredentialID(id), "\(id)")
            }
            let notAnObject = await #expect(throws: TokenVaultClientError.self) {
                try await client.put("payments/alice", provider: "oauth2", token: Data("[1]".utf8))
            }
            guard case .invalidArgument? = notAnObject else {
                Issue.record("expected invalidArgument, got \(String(describing: notAnObject))")
                return
            }
        }
    }

    @Test func missingSocketIsDaemonUnreachable() async throws {
        let directory = TemporaryDirectory()
        let socketPath = directory.file("absent.sock")
        // A long timeout keeps "failed at once" and "waited for the timeout" far apart, even when
        // the rest of the suite keeps the shared event loops busy (1,000 connections, slow clients).
        try await TokenVaultClient.withClient(socketPath: socketPath, timeout: .seconds(60)) { client in
            let started = ContinuousClock.now
            let error = await #expect(throws: TokenVaultClientError.self) {
                try await client.health()
            }
            // Fails at once rather than retrying until the timeout.
            #expect(ContinuousClock.now - started < .seconds(20))
            guard case .daemonUnreachable(let path, let underlying)? = error else {
                Issue.record("expected daemonUnreachable, got \(String(describing: error))")
                return
            }
            #expect(path == socketPath)
            #expect(underlying.contains("no socket"))
            #expect(error?.description.contains("tokenvault serve") == true)
            #expect(error?.description.contains("TOKENVAULT_SOCKET") == true)
        }
    }

    @Test func fileThatIsNotListeningIsDaemonUnreachable() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("plain-file.sock")
        try Data().write(to: URL(fileURLWithPath: path))
        try await TokenVaultClient.withClient(socketPath: path) { client in
            let error = await #expect(throws: TokenVaultClientError.self) {
                try await client.health()
            }
            guard case .daemonUnreachable? = error else {
                Issue.record("expected daemonUnreachable, got \(String(describing: error))")
                return
            }
        }
    }

    @Test func silentDaemonIsTimeout() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("silent.sock")
        // Listens but never accepts: connecting succeeds (the kernel queues it), no answer comes.
        let listener = try SilentListener(path: path)
        defer { listener.close() }
        try await TokenVaultClient.withClient(socketPath: path, timeout: .milliseconds(300)) { client in
            let error = await #expect(throws: TokenVaultClientError.self) {
                try await client.health()
            }
            #expect(error == .timeout)
        }
    }

    @Test func daemonThatStoppedIsDaemonUnreachable() async throws {
        let socketPath = try await Daemon.run { daemon in daemon.socketPath }
        try await TokenVaultClient.withClient(socketPath: socketPath) { client in
            let error = await #expect(throws: TokenVaultClientError.self) {
                try await client.health()
            }
            guard case .daemonUnreachable? = error else {
                Issue.record("expected daemonUnreachable, got \(String(describing: error))")
                return
            }
        }
    }
}

/// A Unix socket that listens and never accepts.
struct SilentListener {
    let descriptor: Int32

    init(path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let bound = withUnixSocketAddress(path) { bind(descriptor, $0, $1) }
        guard descriptor >= 0, bound == 0, listen(descriptor, 8) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    func close() { _ = Glibc.close(descriptor) }
}
