import AsyncHTTPClient
import Foundation
import NIOCore

/// An async client for the TokenVault daemon's local API (HTTP/1.1 + JSON on a Unix socket).
///
/// One instance owns one `HTTPClient` and its connection pool, so keep-alive connections are
/// reused across calls: create one per process and share it. Call ``shutdown()`` before
/// releasing it (debug builds of AsyncHTTPClient trap otherwise), or use ``withClient(socketPath:timeout:_:)``.
///
/// Authorisation is by the calling process's uid/gid (`SO_PEERCRED`); there is nothing to
/// configure here but the socket path.
public final class TokenVaultClient: Sendable {
    /// The daemon's socket, as given.
    public let socketPath: String
    /// Upper bound for each request, from sending it to reading the whole answer.
    public let timeout: Duration

    let http: HTTPClient

    /// - Parameters:
    ///   - socketPath: The daemon's Unix socket (see ``defaultSocketPath(environment:dataDirectory:currentDirectory:packaged:)``).
    ///   - timeout: Upper bound for each request, including connecting.
    public init(socketPath: String, timeout: Duration = .seconds(10)) {
        self.socketPath = socketPath
        self.timeout = timeout
        var configuration = HTTPClient.Configuration()
        configuration.httpVersion = .http1Only
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: TimeAmount(timeout))
        // Below the daemon's default idle timeout (30 s), so the client usually closes idle
        // connections before the daemon does.
        configuration.connectionPool = .init(idleTimeout: .seconds(10))
        // A missing socket or a stopped daemon should fail at once, not after the timeout.
        configuration.connectionPool.retryConnectionEstablishment = false
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Closes pooled connections. The client cannot be used afterwards.
    public func shutdown() async throws {
        try await http.shutdown()
    }

    /// Runs `body` with a new client and shuts it down afterwards, even when `body` throws.
    public static func withClient<Result: Sendable>(
        socketPath: String, timeout: Duration = .seconds(10),
        _ body: (TokenVaultClient) async throws -> Result
    ) async throws -> Result {
        let client = TokenVaultClient(socketPath: socketPath, timeout: timeout)
        let result: Result
        do {
            result = try await body(client)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
        return result
    }

    // MARK: System

    /// `GET /v1/health`: whether the daemon is up and its database usable.
    public func health() async throws -> Health {
        try await send(.get, "/v1/health").decode(Health.self)
    }
}
