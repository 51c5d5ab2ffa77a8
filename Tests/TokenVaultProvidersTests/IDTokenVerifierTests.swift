import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultCrypto
@testable import TokenVaultProviders

/// Id tokens checked by signature on an `oauth2` instance, through its refresh: the key set
/// fetched once and again for an unknown `kid` (not more often than the instance allows), every
/// refused token leaving the rest of the answer (the new refresh token) intact, and the claims'
/// rules.
@Suite struct IDTokenVerifierTests {
    static let issuer = "https://idp.example"

    /// Answers the token endpoint with `idToken` and the JWKS with `keys`, counting JWKS fetches.
    final class Server: ProviderTransport {
        let idToken = Mutex("")
        let keys = Mutex<[[String: JSONValue]]>([])
        let fetches = Mutex(0)
        let unreadable = Mutex(false)

        func send(_ request: PreparedRequest, call: ProviderCall?) async throws(ProviderFailure) -> HTTPAnswer {
            if request.url.hasSuffix("/jwks") {
                fetches.withLock { $0 += 1 }
                if unreadable.withLock({ $0 }) { return HTTPAnswer(status: 503, headers: [:], body: []) }
                let set = JSONValue.object(["keys": .array(keys.withLock { $0 }.map(JSONValue.object))])
                return HTTPAnswer(status: 200, headers: [:], body: Array(try! JSONEncoder().encode(set)))
            }
            let body: JSONValue = .object([
                "access_token": "at-2", "refresh_token": "rt-2", "token_type": "Bearer", "expires_in": 300,
                "id_token": .string(idToken.withLock { $0 }),
            ])
            return HTTPAnswer(status: 200, headers: [:], body: Array(try! JSONEncoder().encode(body)))
        }

        func shutdown() async throws {}
    }

    static func key(_ seed: UInt8) throws -> ClientKey { try ClientKey(scalar: Array(repeating: seed, count: 32)) }

    static func claims(
        audience: JSONValue = "vault", expiresIn: Int64 = 300, issuer: String = IDTokenVerifierTests.issuer
    ) -> [String: JSONValue] {
        let now = Int64(Date().timeIntervalSince1970)
        return [
            "iss": .string(issuer), "sub": "person-1", "aud": audience, "iat": .integer(now),
            "exp": .integer(now + expiresIn),
        ]
    }

    /// A compact JWS of `claims` signed by `key` (header `alg` and `kid` overridable).
    static func token(_ claims: [String: JSONValue], key: ClientKey, header: [String: JSONValue]? = nil) throws
        -> String
    {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let head = header ?? ["alg": "ES256", "kid": .string(key.keyID)]
        let input =
            Base64URL.encode(try encoder.encode(JSONValue.object(head))) + "."
            + Base64URL.encode(try encoder.encode(JSONValue.object(claims)))
        return input + "." + Base64URL.encode(try key.sign(Array(input.utf8)))
    }

    static func provider(_ server: Server, options: [String: JSONValue] = [:]) throws -> OAuth2Provider {
        var all: [String: JSONValue] = [
            "token_endpoint": .string(issuer + "/token"), "jwks_uri": .string(issuer + "/jwks"),
            "issuer": .string(issuer), "client_id": "vault", "client_authentication": "none",
            "id_token_signing_algorithms": .array(["ES256"]), "jwks_refetch_seconds": 3600,
        ]
        all.merge(options) { $1 }
        let configuration = try OAuth2Configuration(ProviderTestSupport.settings(all), environment: [:])
        return OAuth2Provider(
            configuration: configuration, transport: server,
            services: ProviderServices(cryptography: JWSVerification()))
    }

    static func refresh(_ provider: OAuth2Provider) async throws -> TokenPayload {
        try await provider.refresh(
            RefreshRequest(credentialID: try CredentialID("app/c1"), refreshToken: SecretBytes(utf8: "rt-1")))
    }

    @Test func aGoodTokenIsKeptAndARotatedKeyIsFetchedOnce() async throws {
        let server = Server()
        let first = try Self.key(1)
        let second = try Self.key(2)
        server.keys.withLock { $0 = [first.publicJWK] }
        server.idToken.withLock { $0 = try! Self.token(Self.claims(), key: first) }
        let provider = try Self.provider(server)
        defer { Task { try? await provider.shutdown() } }
        var payload = try await Self.refresh(provider)
        #expect(payload.idTokenRejection == nil && payload.secrets.idToken != nil && payload.subject == "person-1")
        payload = try await Self.refresh(provider)
        #expect(payload.idTokenRejection == nil && server.fetches.withLock { $0 } == 1)
        // The server rotates: the new kid is unknown, so the set is fetched again, once.
        server.keys.withLock { $0 = [first.publicJWK, second.publicJWK] }
        server.idToken.withLock { $0 = try! Self.token(Self.claims(), key: second) }
        payload = try await Self.refresh(provider)
        #expect(payload.idTokenRejection == nil && server.fetches.withLock { $0 } == 2)
        // A kid nobody publishes is refused, and cannot make the vault fetch again within the interval.
        server.idToken.withLock { $0 = try! Self.token(Self.claims(), key: try! Self.key(3)) }
        for _ in 0..<3 {
            payload = try await Self.refresh(provider)
            #expect(payload.idTokenRejection?.code == .idTokenInvalid)
        }
        #expect(server.fetches.withLock { $0 } == 2)
    }

    @Test func anUnknownKidFetchesAgainOnceTheIntervalHasPassed() async throws {
        let server = Server()
        let key = try Self.key(4)
        server.idToken.withLock { $0 = try! Self.token(Self.claims(), key: key) }
        let provider = try Self.provider(server, options: ["jwks_refetch_seconds": 0])
        defer { Task { try? await provider.shutdown() } }
        var payload = try await Self.refresh(provider)
        #expect(payload.idTokenRejection != nil && server.fetches.withLock { $0 } == 2)
        server.keys.withLock { $0 = [key.publicJWK] }
        payload = try await Self.refresh(provider)
        #expect(payload.idTokenRejection == nil)
    }

    /// Each refused token: the id token and the subject read from it are gone, the refresh token
    /// and access token are there, and the reason says what failed.
    @Test(arguments: [
        ("tampered", "signature does not verify"), ("expired", "expired at"), ("audience", "audience"),
        ("issuer", "not issued by"), ("none", "'none'"), ("hs256", "'HS256'"), ("azp", "authorized party"),
        ("future", "in the future"),
    ])
    func refusedTokensKeepTheRestOfTheAnswer(fault: String, reason: String) async throws {
        let server = Server()
        let key = try Self.key(5)
        server.keys.withLock { $0 = [key.publicJWK] }
        var claims = Self.claims()
        var header: [String: JSONValue]?
        switch fault {
        case "expired": claims = Self.claims(expiresIn: -120)
        case "audience": claims = Self.claims(audience: "someone-else")
        case "issuer": claims = Self.claims(issuer: "https://evil.example")
        case "none": header = ["alg": "none"]
        case "hs256": header = ["alg": "HS256", "kid": .string(key.keyID)]
        case "azp": claims = Self.claims(audience: .array(["vault", "other"]))
        case "future": claims["iat"] = .integer(Int64(Date().timeIntervalSince1970) + 600)
        default: break
        }
        var text = try Self.token(claims, key: key, header: header)
        if fault == "tampered" {
            var parts = text.split(separator: ".").map(String.init)
            parts[1] = Base64URL.encode(Array(#"{"iss":"https://idp.example","sub":"admin"}"#.utf8))
            text = parts.joined(separator: ".")
        }
        server.idToken.withLock { $0 = text }
        let provider = try Self.provider(server)
        defer { Task { try? await provider.shutdown() } }
        let payload = try await Self.refresh(provider)
        let rejection = try #require(payload.idTokenRejection)
        #expect(rejection.code == .idTokenInvalid && rejection.message.contains(reason), "\(rejection.message)")
        #expect(payload.secrets.idToken == nil && payload.subject == nil)
        #expect(payload.secrets.refreshToken?.revealString() == "rt-2")
        #expect(payload.secrets.accessToken.revealString() == "at-2")
    }

    /// Keys that cannot be read make the token unverifiable, not refused: `provider_unavailable`,
    /// and no second fetch within the interval. A key replaced under the same `kid` is read again.
    @Test func unreadableKeysAndAReplacedKeyUnderTheSameKid() async throws {
        let server = Server()
        let old = try Self.key(7)
        let new = try Self.key(8)
        var renamed = new.publicJWK
        renamed["kid"] = old.publicJWK["kid"]
        server.keys.withLock { $0 = [old.publicJWK] }
        server.idToken.withLock { $0 = try! Self.token(Self.claims(), key: old) }
        let provider = try Self.provider(server, options: ["jwks_refetch_seconds": 3600])
        defer { Task { try? await provider.shutdown() } }
        var payload = try await Self.refresh(provider)
        #expect(payload.idTokenRejection == nil && server.fetches.withLock { $0 } == 1)
        // The server replaces its key under the same kid: the cached key fails the signature, so the
        // set is read again at once, and holds the new key.
        server.keys.withLock { $0 = [renamed] }
        server.idToken.withLock {
            $0 = try! Self.token(Self.claims(), key: new, header: ["alg": "ES256", "kid": .string(old.keyID)])
        }
        payload = try await Self.refresh(provider)
        #expect(payload.idTokenRejection == nil, "\(String(describing: payload.idTokenRejection))")
        #expect(server.fetches.withLock { $0 } == 2)

        let down = Server()
        down.unreadable.withLock { $0 = true }
        down.idToken.withLock { $0 = try! Self.token(Self.claims(), key: old) }
        let blind = try Self.provider(down, options: ["jwks_refetch_seconds": 3600])
        defer { Task { try? await blind.shutdown() } }
        for _ in 0..<2 {
            payload = try await Self.refresh(blind)
            #expect(payload.idTokenRejection?.code == .providerUnavailable)
            #expect(payload.secrets.refreshToken?.revealString() == "rt-2" && payload.secrets.idToken == nil)
        }
        #expect(down.fetches.withLock { $0 } == 1)
    }

    /// The server rotates while its JWKS cannot be read: the held keys do not verify the new
    /// token, which is then unverifiable (`provider_unavailable`), not refused; the old key's
    /// tokens still pass meanwhile.
    @Test func aRotationWhileTheKeysCannotBeReadIsNotARefusal() async throws {
        let server = Server()
        let old = try Self.key(9)
        server.keys.withLock { $0 = [old.publicJWK] }
        server.idToken.withLock { $0 = try! Self.token(Self.claims(), key: old) }
        let provider = try Self.provider(server, options: ["jwks_refetch_seconds": 3600])
        defer { Task { try? await provider.shutdown() } }
        #expect(try await Self.refresh(provider).idTokenRejection == nil)
        server.unreadable.withLock { $0 = true }
        server.idToken.withLock { $0 = try! Self.token(Self.claims(), key: try! Self.key(10)) }
        for _ in 0..<2 {
            #expect(try await Self.refresh(provider).idTokenRejection?.code == .providerUnavailable)
        }
        server.idToken.withLock { $0 = try! Self.token(Self.claims(), key: old) }
        #expect(try await Self.refresh(provider).idTokenRejection == nil)
        #expect(server.fetches.withLock { $0 } == 2, "one read, one failed read again, none after it")
    }

    @Test func theTLSRuleChecksNoSignature() async throws {
        let server = Server()
        server.idToken.withLock { $0 = try! Self.token(Self.claims(audience: "x"), key: try! Self.key(6)) }
        let provider = try Self.provider(server, options: ["id_token_signature": "tls"])
        defer { Task { try? await provider.shutdown() } }
        let payload = try await Self.refresh(provider)
        #expect(payload.idTokenRejection == nil && payload.secrets.idToken != nil)
        #expect(server.fetches.withLock { $0 } == 0)
    }

    @Test func theJWKSRuleNeedsKeysAndAnIssuerWithConfiguredEndpoints() async {
        let failure = await ProviderTestSupport.configurationError([
            "token_endpoint": "https://idp.example/token", "client_id": "vault", "id_token_signature": "jwks",
        ])
        #expect(failure?.key == "providers.acme.id_token_signature")
        let orphan = await ProviderTestSupport.configurationError([
            "token_endpoint": "https://idp.example/token", "client_id": "vault", "jwks_uri": "https://idp.example/jwks",
        ])
        #expect(orphan?.key == "providers.acme.jwks_uri")
    }

    @Test func algorithmsOutsideThePublicKeyOnesAreRefusedInTheConfiguration() async {
        for names: [JSONValue] in [["HS256"], ["none"], ["RS512"], []] {
            let failure = await ProviderTestSupport.configurationError([
                "token_endpoint": "https://idp.example/token", "client_id": "vault",
                "id_token_signing_algorithms": .array(names),
            ])
            #expect(failure?.key == "providers.acme.id_token_signing_algorithms")
        }
    }
}
