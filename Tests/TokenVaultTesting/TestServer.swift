import Foundation
import Logging
import ServiceLifecycle
import TokenVaultCore
import TokenVaultLedger
import TokenVaultProviders
import TokenVaultServer

/// A real server on a real Unix socket over a real SQLite vault, run in-process: the one the
/// server tests talk raw HTTP to and the client tests drive through `TokenVaultClient`.
public final class TestServer: Sendable {
    public let fixture: TestVault
    public let socketPath: String
    public let audit: AuditRecorder
    public let api: VaultAPI
    /// The proxy's upstream clients (shut down by `stop`).
    public let upstream = UpstreamClients()
    private let task: Task<Void, any Error>
    private let group: ServiceGroup

    /// `providers`: the instance names credentials may name; `engine` (or `makeEngine`, given
    /// the vault): the refresh engine, a `StubRefreshService` when neither is given.
    public init(
        policy: AccessPolicy? = nil, idleTimeoutSeconds: Int = 30, maximumBodySize: Int = 64 * 1024,
        providers: Set<String> = ["oauth2", "tinkoff-id"],
        engine: (any RefreshService)? = nil, makeEngine: ((TestVault) throws -> any RefreshService)? = nil,
        configure: (inout VaultAPI.Options) -> Void = { _ in }
    ) async throws {
        // Off the concurrency pool: a vault's creation writes and syncs files, and a suite that
        // starts many servers at once would stall every test's timers on a two-core machine.
        fixture = try await offThePool { UncheckedBox(try TestVault()) }.value
        // Name-only instances (each named after its kind), unless the engine puts its own table
        // in force.
        fixture.vault.install(
            ProviderTable(
                settings: Dictionary(uniqueKeysWithValues: providers.map { ($0, ProviderSettings(name: $0, kind: $0)) })
            ))
        let engine = try engine ?? makeEngine?(fixture)
        socketPath = fixture.directory.file("run/tokenvault.sock")
        try SocketGuard.prepare(path: socketPath)
        let logger = Logger(label: "test-server")
        var auditOptions = AuditRecorder.Options()
        auditOptions.flushInterval = .milliseconds(50)
        audit = AuditRecorder(vault: fixture.vault, options: auditOptions, logger: logger)
        var options = VaultAPI.Options(
            maximumBodySize: maximumBodySize, version: "test",
            backupDirectory: fixture.directory.file("backups"))
        options.upstream = upstream
        configure(&options)
        api = VaultAPI(
            vault: fixture.vault, engine: engine ?? StubRefreshService(vault: fixture.vault), admin: fixture.database,
            rotation: KeyRotation(vault: fixture.vault, keyring: fixture.keyring, terms: fixture.database),
            policy: policy ?? AccessPolicy(rules: [], daemonUID: getuid()), audit: audit, options: options)
        let (ready, readyContinuation) = AsyncStream.makeStream(of: Void.self)
        let application = VaultServer.application(
            api: api, listener: .path(socketPath), idleTimeoutSeconds: idleTimeoutSeconds, logger: logger
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

    public func stop() async {
        fixture.vault.events.close()
        await group.triggerGracefulShutdown()
        _ = await task.result
        await upstream.shutdown()
    }

    public func request(_ method: String, _ target: String, body: String? = nil, headers: [String: String] = [:])
        async throws -> RawHTTPResponse
    {
        let socketPath = socketPath
        return try await offThePool {
            try UnixSocketHTTP.request(socketPath, method, target, body: body, headers: headers)
        }
    }

    /// Sends `bytes` as they are (a request the client library would not write) and reads one
    /// response.
    public func raw(_ bytes: [UInt8]) async throws -> RawHTTPResponse {
        let socketPath = socketPath
        return try await offThePool {
            let connection = try UnixSocketConnection(path: socketPath)
            try connection.send(bytes)
            guard let response = try connection.readResponse() else { throw SocketTestError("connection closed") }
            return response
        }
    }

    /// Sends a request and reads the head and the first line of an NDJSON stream, then hangs
    /// up. `whileOpen` runs once the request is sent (to cause an event on a stream that has
    /// no first line of its own).
    public func firstLine(
        _ method: String, _ target: String, whileOpen: (@Sendable () async throws -> Void)? = nil
    ) async throws -> RawHTTPResponse {
        let socketPath = socketPath
        let connection = try UnixSocketConnection(path: socketPath)
        try connection.send("\(method) \(target) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        // The server subscribes when it handles the request, which a loaded machine may delay:
        // cause the event again and again until the first line has arrived.
        let trigger = Task {
            while !Task.isCancelled {
                try await Task.sleep(for: .milliseconds(100))
                try await whileOpen?()
            }
        }
        defer { trigger.cancel() }
        let sendable = UncheckedBox(connection)
        return try await offThePool {
            guard let response = try sendable.value.readResponse(timeout: 10, firstLine: true) else {
                throw SocketTestError("the stream closed without an answer")
            }
            return response
        }
    }

    /// Our own uid may write and read tokens in namespace "allowed" only: root's admin rights
    /// are off and the daemon uid is someone else (the tests run as root).
    public static func policyAllowingOnlyNamespaceAllowed() -> AccessPolicy {
        let me = getuid()
        return AccessPolicy(
            rules: [.init(subject: .user(me), namespaces: ["allowed"], permissions: [.credentialWrite, .tokenRead])],
            daemonUID: me &+ 12345, rootIsAdmin: false)
    }

    public func putBody(provider: String = "tinkoff-id", token: String, labels: String = "{}") -> String {
        "{\"provider\": \"\(provider)\", \"labels\": \(labels), \"token\": \(token)}"
    }
}

/// Moves a non-Sendable test object across one hop.
private struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Stands in for the refresh engine in server tests: a refresh returns the credential as it
/// is, a removal deletes locally. Engine behaviour is tested in TokenVaultEngineTests.
public struct StubRefreshService: RefreshService {
    public let vault: Vault
    /// What a code exchange fails with.
    public var redeemFailure = ProviderFailure(
        kind: .invalidGrant, code: "invalid_grant", message: "the code is unknown")

    public init(vault: Vault) { self.vault = vault }

    public func refresh(_ id: CredentialID, reason: RefreshReason) async throws -> RefreshOutcome {
        .refreshed(try await vault.metadata(id))
    }

    public func refreshOnDemand(_ id: CredentialID, minimumTTL: Double) async throws -> RefreshOutcome {
        try await refresh(id, reason: .onDemand)
    }

    public func refreshForced(_ id: CredentialID) async throws -> RefreshOutcome {
        try await refresh(id, reason: .forced)
    }

    public func remove(_ id: CredentialID, force: Bool, audit: AuditEvent?) async throws -> RemovalOutcome {
        try await vault.delete(id, audit: audit)
        return .deleted(revoked: false)
    }

    public func providerStates() -> [TokenVaultCore.ProviderState] {
        [TokenVaultCore.ProviderState(name: "oauth2", kind: "oauth2", condition: .ok)]
    }

    /// Answers like a provider whose code is unknown (no provider runs in server tests).
    public func redeem(_ redemption: CodeRedemption) async throws -> RedeemedCode { throw redeemFailure }

    /// No provider runs in server tests: sign-ins are the engine's (TokenVaultEngineTests).
    public func startSignIn(_ start: SignInStart) async throws -> StartedSignIn {
        throw ProviderFailure.notConfigured(start.provider)
    }

    public func finishSignIn(_ finish: SignInFinish) async throws -> RedeemedCode { throw redeemFailure }

    public var counters: RefreshCounters { RefreshCounters() }
}
