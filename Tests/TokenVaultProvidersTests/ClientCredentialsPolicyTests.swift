import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultProviders

/// An `oauth2` instance's client credentials grant: off unless its `client_credentials` option
/// lists what may be asked, refused before anything is sent when a grant asks for more, and the
/// form sent otherwise.
@Suite struct ClientCredentialsPolicyTests {
    /// Records every request and answers a client's token.
    final class Server: ProviderTransport {
        let bodies = Mutex<[String]>([])
        let authorizations = Mutex<[String]>([])

        func send(_ request: PreparedRequest, call: ProviderCall?) async throws(ProviderFailure) -> HTTPAnswer {
            bodies.withLock { $0.append(String(decoding: request.body, as: UTF8.self)) }
            for header in request.headers where header.name.lowercased() == "authorization" {
                authorizations.withLock { $0.append(header.value) }
            }
            let body: JSONValue = .object(["access_token": "at-client", "token_type": "Bearer", "expires_in": 300])
            return HTTPAnswer(status: 200, headers: [:], body: Array(try! JSONEncoder().encode(body)))
        }

        func shutdown() async throws {}
    }

    let directory = TemporaryDirectory("tokenvault-client-credentials")

    /// A confidential client's options, its secret in a file of the test's directory.
    var base: [String: JSONValue] {
        let secretFile = directory.file("client.secret")
        writeFile(secretFile, Data("vault-secret".utf8), permissions: 0o600)
        return [
            "token_endpoint": "https://idp.example/token", "client_id": "vault",
            "client_secret_file": .string(secretFile),
        ]
    }

    func provider(_ server: Server, policy: JSONValue?) throws -> OAuth2Provider {
        var options = base
        options["client_credentials"] = policy
        let configuration = try OAuth2Configuration(ProviderTestSupport.settings(options), environment: [:])
        return OAuth2Provider(configuration: configuration, transport: server)
    }

    static func grant(_ grant: CredentialGrant, at provider: OAuth2Provider) async throws(ProviderFailure)
        -> TokenPayload
    {
        try await provider.obtain(GrantRequest(credentialID: try! CredentialID("machines/m"), grant: grant))
    }

    @Test func theOptionIsRead() async throws {
        let policy = try OAuth2Configuration(
            ProviderTestSupport.settings(
                base.merging([
                    "client_credentials": .object([
                        "scopes": .array(["a", "b"]), "audience": .array(["https://api.example"]),
                    ])
                ]) { $1 }), environment: [:]
        ).clientCredentials
        #expect(policy == ClientCredentialsPolicy(scopes: ["a", "b"], audiences: ["https://api.example"]))
        #expect(try OAuth2Configuration(ProviderTestSupport.settings(base), environment: [:]).clientCredentials == nil)
        for (options, expected) in [
            (["client_credentials": .object(["scope": .array(["a"])])], "client_credentials.scope"),
            (["client_credentials": .object(["scopes": .array(["a b"])])], "client_credentials.scopes[0]"),
            (["client_credentials": "all"], "client_credentials"),
        ] as [([String: JSONValue], String)] {
            let error = await ProviderTestSupport.configurationError(base.merging(options) { $1 })
            #expect(error.map { "\($0)".contains(expected) } == true, "\(options): \(String(describing: error))")
        }
        // A public client has nothing to authenticate a grant of its own with.
        let publicClient = await ProviderTestSupport.configurationError([
            "token_endpoint": "https://idp.example/token", "client_id": "vault",
            "client_credentials": .object(["scopes": .array(["a"])]),
        ])
        #expect(publicClient.map { "\($0)".contains("client_authentication is none") } == true)
    }

    @Test func aGrantAskingForWhatIsNotListedIsNeverSent() async throws {
        let server = Server()
        let provider = try provider(server, policy: .object(["scopes": .array(["reports.read"])]))
        defer { Task { try? await provider.shutdown() } }
        for grant in [
            CredentialGrant(scopes: ["admin"]), CredentialGrant(scopes: ["reports.read"], audiences: ["https://x"]),
            CredentialGrant(resources: ["https://api.example/r"]),
        ] {
            do {
                _ = try await Self.grant(grant, at: provider)
                Issue.record("\(grant) was sent")
            } catch {
                #expect(error.code == .grantNotSupported && error.message.contains("client_credentials"))
            }
        }
        #expect(server.bodies.withLock { $0 }.isEmpty)
        let payload = try await Self.grant(CredentialGrant(scopes: ["reports.read"]), at: provider)
        #expect(payload.secrets.accessToken.revealString() == "at-client")
        let sent = try #require(server.bodies.withLock { $0 }.first)
        #expect(sent.contains("grant_type=client_credentials") && sent.contains("scope=reports.read"))
        #expect(server.authorizations.withLock { $0 }.first?.hasPrefix("Basic ") == true, "as the client")
    }

    @Test func anInstanceWithoutTheOptionRefusesEveryGrant() async throws {
        let server = Server()
        let provider = try provider(server, policy: nil)
        defer { Task { try? await provider.shutdown() } }
        await #expect(throws: ProviderFailure.self) { _ = try await Self.grant(CredentialGrant(), at: provider) }
        #expect(server.bodies.withLock { $0 }.isEmpty)
    }
}
