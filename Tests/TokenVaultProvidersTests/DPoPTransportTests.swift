import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultProviders
import TokenVaultTesting

/// DPoP token requests (RFC 9449 section 5): a provider instance marked `dpop` sends proofs the
/// loopback token endpoint checks, answers its nonce challenge once, and gets tokens bound to
/// the vault's key; nothing else is sent again (a refused proof, a challenge recovered from the
/// courier's spool).
@Suite struct DPoPTransportTests {
    private static func provider(
        _ server: TestOAuthServer, _ directory: TemporaryDirectory, name: String = "acme", sessions: DPoPSessions
    ) throws -> any TokenProvider {
        let secret = directory.file("secret")
        writeFile(secret, Data("vault-secret".utf8), permissions: 0o600)
        var settings = ProviderTestSupport.settings(
            [
                "token_endpoint": .string(server.tokenURL), "client_id": "vault-client",
                "client_secret_file": .string(secret),
            ], name: name)
        settings.dpop = true
        return try #require(try ProviderFactory.make(settings, environment: [:], dpop: sessions))
    }

    @Test func aRefreshAnswersTheNonceChallengeAndIsBoundToTheInstancesKey() async throws {
        let verifier = DPoPVerifier()
        var options = TestOAuthServer.Options()
        options.dpop = verifier
        let server = try await TestOAuthServer.start(options)
        let directory = TemporaryDirectory("tokenvault-dpop")
        let keyring = try Keyring.bootstrap(masterKey: SodiumRandom.secret(count: 32), store: InMemoryStore())
        let sessions = DPoPSessions(keys: keyring)
        let provider = try Self.provider(server, directory, sessions: sessions)
        let other = try Self.provider(server, directory, name: "other", sessions: sessions)
        defer {
            Task {
                await ProviderTable.shutdown([provider, other])
                await server.shutdown()
            }
        }
        let key = try keyring.signer(for: "acme").thumbprint
        let issued = server.issue()
        let first = try await provider.refresh(OAuth2ProviderFixture.refreshRequest(issued.refreshToken))
        #expect(verifier.nonceChallenges == 1 && verifier.acceptedKeys == [key])
        #expect(first.tokenType == "DPoP")
        let access = first.secrets.accessToken.revealString()
        #expect(server.boundKey(of: access) == key)
        // The nonce is remembered: the next refresh is not challenged.
        let refreshToken = try #require(first.secrets.refreshToken).revealString()
        let second = try await provider.refresh(OAuth2ProviderFixture.refreshRequest(refreshToken))
        #expect(verifier.nonceChallenges == 1 && verifier.acceptedKeys == [key, key])
        // A refresh token bound to this instance's key is refused with another instance's key
        // (checked before it is spent), and a proof the server refuses is answered with a new one.
        let bound = try #require(second.secrets.refreshToken).revealString()
        await #expect(throws: ProviderFailure.self) {
            _ = try await other.refresh(OAuth2ProviderFixture.refreshRequest(bound))
        }
        #expect(!server.isSpent(bound))
        // A proof the server refuses is not followed by another: the refusal goes to the engine
        // (misconfigured), the refresh token is not spent, and the next refresh goes through.
        let accepted = verifier.acceptedKeys.count
        verifier.refuseNextAsReplayed()
        await #expect {
            _ = try await provider.refresh(OAuth2ProviderFixture.refreshRequest(bound))
        } throws: { error in
            (error as? ProviderFailure).map { $0.code.rawValue == "invalid_dpop_proof" && $0.kind == .misconfigured }
                ?? false
        }
        #expect(!server.isSpent(bound) && verifier.acceptedKeys.count == accepted)
        _ = try await provider.refresh(OAuth2ProviderFixture.refreshRequest(bound))
        #expect(verifier.acceptedKeys.last == key && verifier.acceptedKeys.count == accepted + 1)
    }

    private static func scripted(_ first: HTTPAnswer) throws -> (any TokenProvider, RecordingTransport) {
        let base = RecordingTransport(first: first)
        var settings = ProviderTestSupport.settings(
            ["token_endpoint": "http://127.0.0.1:9/token", "client_id": "c", "client_authentication": "none"])
        settings.dpop = true
        let provider = try #require(
            try ProviderFactory.make(
                settings, environment: [:], transport: { _, _ in base },
                dpop: DPoPSessions(
                    keys: try Keyring.bootstrap(masterKey: SodiumRandom.secret(count: 32), store: InMemoryStore()))))
        return (provider, base)
    }

    private static func challenge(nonce: String?) -> HTTPAnswer {
        var headers = ["content-type": "application/json"]
        headers["dpop-nonce"] = nonce
        return HTTPAnswer(status: 400, headers: headers, body: Array(#"{"error":"use_dpop_nonce"}"#.utf8))
    }

    /// The challenge is answered under the same courier key (its answer replaces the challenge
    /// the courier keeps), with the nonce it brought.
    @Test func theChallengeIsAnsweredOnceUnderTheSameKeyWithItsNonce() async throws {
        let (provider, base) = try Self.scripted(Self.challenge(nonce: "n-42"))
        try await withStopping(provider, stop: { await ProviderTable.shutdown([$0]) }) { provider in
            var request = OAuth2ProviderFixture.refreshRequest("rt-1")
            request.call = ProviderCall(key: "refresh:7")
            _ = try await provider.refresh(request)
            #expect(base.sent.map(\.key) == ["refresh:7", "refresh:7"])
            #expect(base.sent.map(\.nonce) == [nil, "n-42"])
        }
    }

    /// A challenge recovered from the spool (sent before a restart: a recovered code exchange
    /// has no code left to send) and one without a nonce are not answered: the engine retries.
    @Test func aRecoveredChallengeOrOneWithoutANonceIsNotAnswered() async throws {
        var recovered = Self.challenge(nonce: "n-old")
        recovered.sentAt = Timestamp.now()
        for first in [recovered, Self.challenge(nonce: nil)] {
            let (provider, base) = try Self.scripted(first)
            try await withStopping(provider, stop: { await ProviderTable.shutdown([$0]) }) { provider in
                await #expect {
                    _ = try await provider.refresh(OAuth2ProviderFixture.refreshRequest("rt-1"))
                } throws: { error in
                    (error as? ProviderFailure).map { $0.code.rawValue == "use_dpop_nonce" && $0.kind == .transient }
                        ?? false
                }
                #expect(base.sent.count == 1)
            }
        }
    }
}

/// Answers the first request with `first` and the others with a token response, recording each
/// request's call key and proof nonce.
private final class RecordingTransport: ProviderTransport {
    struct Sent: Sendable {
        var key: String?
        var nonce: String?
    }

    private let first: HTTPAnswer
    private let log = Mutex<[Sent]>([])
    var sent: [Sent] { log.withLock { $0 } }

    init(first: HTTPAnswer) { self.first = first }

    func send(_ request: PreparedRequest, call: ProviderCall?) async throws(ProviderFailure) -> HTTPAnswer {
        let proof = request.headers.first { $0.name == "DPoP" }?.value ?? ""
        let count = log.withLock { log in
            log.append(Sent(key: call?.key, nonce: DPoPVerifier.claims(of: proof)["nonce"] as? String))
            return log.count
        }
        if count == 1 { return first }
        return HTTPAnswer(
            status: 200, headers: ["content-type": "application/json"],
            body: Array(#"{"access_token":"at-x","token_type":"DPoP","expires_in":60}"#.utf8))
    }

    func shutdown() async throws {}
}
