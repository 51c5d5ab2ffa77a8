import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultCrypto
@testable import TokenVaultProviders

/// An `oauth2` instance's server metadata kept for restarts and read again: a copy kept at each
/// read, used when the server's metadata cannot be read (only by an instance with the same
/// source), read again in the background once `metadata_refresh_seconds` have passed, and at
/// once after an endpoint answered 404.
@Suite struct KeptMetadataTests {
    static let issuer = "https://idp.example"

    final class MemoryStore: ProviderMetadataStore {
        let copies = Mutex<[String: KeptProviderMetadata]>([:])
        func keptMetadata(of instance: String) async -> KeptProviderMetadata? { copies.withLock { $0[instance] } }
        func keep(_ metadata: KeptProviderMetadata, of instance: String) async {
            copies.withLock { $0[instance] = metadata }
        }
    }

    /// Serves the metadata (unless `down`) naming `tokenPath` as the token endpoint, and answers
    /// token requests at that path only (404 elsewhere).
    final class Server: ProviderTransport {
        let down = Mutex(false)
        let tokenPath = Mutex("/token")
        let metadataReads = Mutex(0)
        let tokenCalls = Mutex<[String]>([])

        func send(_ request: PreparedRequest, call: ProviderCall?) async throws(ProviderFailure) -> HTTPAnswer {
            if request.url.contains("/.well-known/") {
                guard !down.withLock({ $0 }) else {
                    throw ProviderFailure(kind: .transient, code: .connectionFailed, message: "connection refused")
                }
                metadataReads.withLock { $0 += 1 }
                let document: JSONValue = .object([
                    "issuer": .string(issuer), "token_endpoint": .string(issuer + tokenPath.withLock { $0 }),
                ])
                return HTTPAnswer(status: 200, headers: [:], body: Array(try! JSONEncoder().encode(document)))
            }
            tokenCalls.withLock { $0.append(request.url) }
            guard request.url == issuer + tokenPath.withLock({ $0 }) else {
                return HTTPAnswer(status: 404, headers: [:], body: Array(#"{"error":"not_found"}"#.utf8))
            }
            return HTTPAnswer(
                status: 200, headers: [:],
                body: Array(#"{"access_token":"at","refresh_token":"rt","token_type":"Bearer","expires_in":60}"#.utf8))
        }

        func shutdown() async throws {}
    }

    static func provider(_ server: Server, _ store: MemoryStore, options: [String: JSONValue] = [:]) throws
        -> OAuth2Provider
    {
        var all: [String: JSONValue] = [
            "issuer": .string(issuer), "client_id": "vault", "client_authentication": "none",
        ]
        all.merge(options) { $1 }
        let services = ProviderServices(cryptography: JWSVerification())
        services.use(
            try Keyring.bootstrap(masterKey: SodiumRandom.secret(count: 32), store: InMemoryStore()), metadata: store)
        return OAuth2Provider(
            configuration: try OAuth2Configuration(ProviderTestSupport.settings(all), environment: [:]),
            transport: server, services: services)
    }

    static func refresh(_ provider: OAuth2Provider) async throws(ProviderFailure) -> TokenPayload {
        try await provider.refresh(OAuth2ProviderFixture.refreshRequest("rt-0"))
    }

    @Test func aRestartWithTheMetadataDownUsesTheKeptCopy() async throws {
        let server = Server()
        let store = MemoryStore()
        let first = try Self.provider(server, store)
        _ = try await Self.refresh(first)
        try await first.shutdown()
        let kept = try #require(store.copies.withLock { $0["acme"] })
        #expect(
            kept.url == Self.issuer + "/.well-known/oauth-authorization-server"
                && kept.document.contains("token_endpoint"))

        // A restart while the metadata cannot be read: the kept copy's endpoints are used.
        server.down.withLock { $0 = true }
        let restarted = try Self.provider(server, store)
        _ = try await Self.refresh(restarted)
        try await restarted.shutdown()
        #expect(server.tokenCalls.withLock { $0 }.count == 2)

        // An instance configured from another source does not use it.
        let other = try Self.provider(
            server, store,
            options: ["issuer": .null, "discovery_url": .string(Self.issuer + "/.well-known/openid-configuration")])
        await #expect(throws: ProviderFailure.self) { try await Self.refresh(other) }
        try await other.shutdown()
    }

    @Test func metadataIsReadAgainWhenAnEndpointMovesNotAtOnce() async throws {
        let server = Server()
        let store = MemoryStore()
        let provider = try Self.provider(
            server, store, options: ["metadata_refresh_seconds": 3600, "jwks_refetch_seconds": 1])
        _ = try await Self.refresh(provider)
        #expect(server.metadataReads.withLock { $0 } == 1)
        // The server moves its token endpoint: the old one answers 404. The metadata is read
        // again a second later (jwks_refetch_seconds), not at once, and not per 404.
        server.tokenPath.withLock { $0 = "/v2/token" }
        for _ in 0..<3 {
            await #expect(throws: ProviderFailure.self) { try await Self.refresh(provider) }
        }
        #expect(server.metadataReads.withLock { $0 } == 1)
        try await Task.sleep(for: .seconds(1.1))
        _ = try? await Self.refresh(provider)
        #expect(try await waitUntil { store.copies.withLock { $0["acme"] }?.document.contains("v2") == true })
        _ = try await Self.refresh(provider)
        #expect(server.tokenCalls.withLock { $0 }.last == Self.issuer + "/v2/token")
        #expect(server.metadataReads.withLock { $0 } == 2)
        try await provider.shutdown()
    }

    @Test func metadataIsReadAgainAfterItsPeriod() async throws {
        let server = Server()
        let provider = try Self.provider(server, MemoryStore(), options: ["metadata_refresh_seconds": 1])
        _ = try await Self.refresh(provider)
        _ = try await Self.refresh(provider)
        #expect(server.metadataReads.withLock { $0 } == 1)
        try await Task.sleep(for: .seconds(1.1))
        _ = try await Self.refresh(provider)
        #expect(try await waitUntil { server.metadataReads.withLock { $0 } == 2 })
        try await provider.shutdown()
    }
}
