import Synchronization
import TokenVaultCore
import TokenVaultTesting

/// For the connection-reuse experiment only: the same refresh grant as `OAuth2Provider`
/// (form body, `client_secret_basic`), sent by TokenVaultTesting's bare NIO client over a
/// pool of kept-alive connections to the loopback server instead of a fresh connection per
/// call. It lacks everything that makes `OAuth2Provider` safe to ship (error classification,
/// redaction, timeouts), so it measures what reuse would save, nothing more.
final class KeepAliveProvider: RefreshOnlyProvider {
    let name = RefreshRig.providerName
    private let port: Int
    private let path: String
    private let idle = Mutex<[TestHTTPConnection]>([])

    init(port: Int, path: String) {
        self.port = port
        self.path = path
    }

    func refresh(_ request: RefreshRequest) async throws(ProviderFailure) -> TokenPayload {
        do {
            let pooled = idle.withLock { $0.popLast() }
            let connection: TestHTTPConnection
            if let pooled { connection = pooled } else { connection = try await TestHTTPConnection.connect(port: port) }
            let response = try await connection.postForm(
                path, ["grant_type": "refresh_token", "refresh_token": request.refreshToken.revealString()],
                basicAuth: (user: "vault-client", password: "vault-secret"))
            if connection.isOpen { idle.withLock { $0.append(connection) } }
            guard response.status == 200 else {
                throw ProviderFailure(kind: .invalidGrant, code: .http(Int(response.status)), message: response.text)
            }
            return try TokenPayloadDecoder().decode(response.body)
        } catch let failure as ProviderFailure {
            throw failure
        } catch {
            throw ProviderFailure(kind: .unknownOutcome, code: .connectionDropped, message: "\(error)")
        }
    }

    func shutdown() async {
        for connection in idle.withLock({ pool in
            defer { pool.removeAll() }
            return pool
        }) {
            await connection.close()
        }
    }
}
