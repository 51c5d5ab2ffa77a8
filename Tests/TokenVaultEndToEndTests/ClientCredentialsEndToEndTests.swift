import Foundation
import Testing
import TokenVaultTesting

/// Credentials the vault obtains itself by a client credentials grant, through the built daemon
/// against Authlib's grant (`scripts/authorization-server.py`): obtained at a put that names the
/// grant, renewed by the engine before each expiry, served by token reads; a client the server
/// refuses is the instance's misconfiguration (paused, the credential `failing`, never
/// `needs_reauth`), and renewals go on once it is accepted again.
@Suite struct ClientCredentialsEndToEndTests {
    static func http(_ socket: String, _ method: String, _ target: String, body: String? = nil) async throws
        -> RawHTTPResponse
    {
        try await offThePool { try UnixSocketHTTP.request(socket, method, target, body: body) }
    }

    static func metadata(_ harness: ResilienceHarness, _ name: String) async throws -> [String: Any] {
        try await Self.http(harness.socket, "GET", "/v1/credentials/machines/\(name)").json()
    }

    static func lastError(_ metadata: [String: Any]) -> String? {
        (metadata["last_error"] as? [String: Any])?["code"] as? String
    }

    static func condition(_ harness: ResilienceHarness) async throws -> String? {
        let health = try await Self.http(harness.socket, "GET", "/v1/health").json()
        let providers = health["providers"] as? [[String: Any]] ?? []
        return providers.first { $0["name"] as? String == "authlib" }?["condition"] as? String
    }

    @Test func obtainedRenewedAndARefusedClientIsTheInstances() async throws {
        // Six-second tokens: renewed about every three seconds. A refused client is probed again
        // after two seconds.
        let (harness, server) = try await SignInHarness.make(
            serverArguments: ["--lifetime", "6"],
            instance: #"""
                "client_secret_file": "$SECRET", "limits": {"misconfigured_probe_seconds": 2},
                "client_credentials": {"scopes": ["reports.read", "reports.list"], "audience": ["https://api.example"],
                    "resource": ["https://api.example/reports"]}
                """#)
        let daemon = try await offThePool { try harness.startDaemon() }
        defer { daemon.terminate() }

        let put = try await offThePool {
            try CommandRunner().run([
                "put", "machines/reports", "--provider", "authlib", "--client-credentials", "--scope", "reports.read",
                "--scope", "reports.list", "--audience", "https://api.example", "--resource",
                "https://api.example/reports", "--socket", harness.socket, "--json",
            ])
        }
        #expect(put.status == 0, "\(put.stderr)")
        let stored = try JSONSerialization.jsonObject(with: Data(put.stdout.utf8)) as? [String: Any] ?? [:]
        #expect(stored["generation"] as? Int == 1 && stored["has_refresh_token"] as? Bool == false, "\(stored)")
        let grant = stored["grant"] as? [String: Any] ?? [:]
        #expect(grant["type"] as? String == "client_credentials", "\(stored)")
        #expect(grant["scopes"] as? [String] == ["reports.list", "reports.read"], "\(grant)")
        #expect(stored["refresh_at"] != nil && stored["subject"] == nil, "\(stored)")
        let asked = try await server.hook("GET", "/test/client-credentials")
        let first = (asked["requests"] as? [[String: Any]])?.first ?? [:]
        #expect(first["scope"] as? String == "reports.list reports.read", "\(asked)")
        #expect(first["audience"] as? String == "https://api.example", "\(asked)")
        #expect(first["resource"] as? [String] == ["https://api.example/reports"], "\(asked)")

        let token = try await Self.http(harness.socket, "GET", "/v1/credentials/machines/reports/token")
        #expect(token.status == 200, "\(token.text)")
        let firstToken = try #require(token.json()["access_token"] as? String)
        // The token read is of this generation or an earlier one: the engine renews on its own
        // clock, however slowly this test runs.
        let readAt = (try await Self.metadata(harness, "reports"))["generation"] as? Int ?? 0

        // The engine renews it before each expiry, with nobody asking.
        let renewed = try await waitUntil(within: 30) {
            (try await Self.metadata(harness, "reports"))["generation"] as? Int ?? 0 >= max(3, readAt + 1)
        }
        #expect(renewed)
        let later = try await Self.http(harness.socket, "GET", "/v1/credentials/machines/reports/token").json()
        #expect(later["access_token"] as? String != firstToken, "a later generation serves its own token")
        // Every grant answered became a generation (one more may be in flight), read in that order.
        let generation = (try await Self.metadata(harness, "reports"))["generation"] as? Int ?? 0
        let issued = try await server.hook("GET", "/test/client-credentials")["issued"] as? Int ?? 0
        #expect(issued >= generation && issued <= generation + 1, "\(issued) tokens for \(generation) generations")

        // A scope the instance does not list is refused before anything is sent.
        let unlisted = try await Self.http(
            harness.socket, "PUT", "/v1/credentials/machines/admin",
            body: #"{"provider": "authlib", "grant": {"type": "client_credentials", "scopes": ["admin"]}}"#)
        #expect(unlisted.status == 422 && unlisted.text.contains("client_credentials.scopes"), "\(unlisted.text)")
        let sent = try await server.hook("GET", "/test/client-credentials")["requests"] as? [[String: Any]] ?? []
        #expect(!sent.contains { ($0["scope"] as? String)?.contains("admin") == true }, "the refused grant was sent")

        // The server refuses the client: the instance is paused as misconfigured, the credential
        // is failing with the server's code, and a new grant is not sent while it is paused.
        try await server.hook("POST", "/test/client-secret", json: #"{"secret": "rotated-at-the-server"}"#)
        let refused = try await waitUntil(within: 20) {
            Self.lastError(try await Self.metadata(harness, "reports")) == "invalid_client"
        }
        let failing = try await Self.metadata(harness, "reports")
        #expect(refused && failing["status"] as? String == "failing", "\(failing)")
        let paused = try await Self.condition(harness)
        #expect(paused == "misconfigured")
        let another = try await Self.http(
            harness.socket, "PUT", "/v1/credentials/machines/other",
            body: #"{"provider": "authlib", "grant": {"type": "client_credentials"}}"#)
        #expect(another.status == 502 && another.text.contains("provider_paused"), "\(another.text)")
        let absent = try await Self.http(harness.socket, "GET", "/v1/credentials/machines/other")
        #expect(absent.status == 404)

        // Accepted again, the next probe renews it and the instance reopens.
        try await server.hook("POST", "/test/client-secret", json: #"{"secret": "vault-secret"}"#)
        let recovered = try await waitUntil(within: 30) {
            let metadata = try await Self.metadata(harness, "reports")
            return metadata["status"] as? String == "active" && Self.lastError(metadata) == nil
        }
        let recoveredMetadata = try await Self.metadata(harness, "reports")
        #expect(recovered, "\(recoveredMetadata)")
        let reopened = try await Self.condition(harness)
        #expect(reopened == "ok")
    }

    /// What a put with a grant refuses before anything is sent: malformed grants, and any grant at
    /// an instance whose `client_credentials` option is absent.
    @Test func malformedGrantsAreRefused() async throws {
        let (harness, server) = try await SignInHarness.make()
        let daemon = try await offThePool { try harness.startDaemon() }
        defer { daemon.terminate() }
        for (body, field) in [
            (#"{"provider": "authlib", "grant": {"type": "password"}}"#, "grant.type"),
            (#"{"provider": "authlib", "grant": {"type": "client_credentials", "scopes": ["a b"]}}"#, "grant.scopes"),
            (#"{"provider": "authlib", "grant": {"type": "client_credentials", "secret": "x"}}"#, "grant.secret"),
            (#"{"provider": "authlib", "grant": "client_credentials"}"#, "grant"),
            (
                #"{"provider": "authlib", "grant": {"type": "client_credentials"}, "token": {"access_token": "a"}}"#,
                "grant"
            ),
        ] {
            let answer = try await Self.http(harness.socket, "PUT", "/v1/credentials/machines/bad", body: body)
            #expect(answer.status == 400 && answer.json()["field"] as? String == field, "\(body): \(answer.text)")
        }
        // A well-formed grant at an instance that does not allow the grant.
        let off = try await Self.http(
            harness.socket, "PUT", "/v1/credentials/machines/bad",
            body: #"{"provider": "authlib", "grant": {"type": "client_credentials"}}"#)
        #expect(off.status == 422 && off.text.contains("does not allow client credentials"), "\(off.text)")
        let issued = try await server.hook("GET", "/test/client-credentials")["issued"] as? Int
        #expect(issued == 0)
    }

    /// A token derived by RFC 8693 is kept as a credential of its own only when a put asks for it:
    /// obtained by exchanging the subject's access token at Authlib, renewed by exchanging the
    /// subject's current one, and refused where Authlib refuses the audience.
    @Test func aDerivedTokenIsKeptAsACredentialWhenAsked() async throws {
        let (harness, server) = try await SignInHarness.make(
            serverArguments: ["--lifetime", "6", "--exchange-audience", "https://api.example"],
            instance: #""client_secret_file": "$SECRET", "client_credentials": {"scopes": ["reports.read"]}"#)
        let daemon = try await offThePool { try harness.startDaemon() }
        defer { daemon.terminate() }
        let subject = try await Self.http(
            harness.socket, "PUT", "/v1/credentials/machines/reports",
            body: #"{"provider": "authlib", "grant": {"type": "client_credentials", "scopes": ["reports.read"]}}"#)
        #expect(subject.status == 201, "\(subject.text)")

        let put = try await offThePool {
            try CommandRunner().run([
                "put", "machines/reports-api", "--provider", "authlib", "--exchange-from", "machines/reports",
                "--audience", "https://api.example", "--socket", harness.socket, "--json",
            ])
        }
        #expect(put.status == 0, "\(put.stderr)")
        let stored = try JSONSerialization.jsonObject(with: Data(put.stdout.utf8)) as? [String: Any] ?? [:]
        let grant = stored["grant"] as? [String: Any] ?? [:]
        #expect(grant["type"] as? String == "token_exchange" && grant["subject"] as? String == "machines/reports")
        let exchanges = try await server.hook("GET", "/test/exchanges")
        let first = (exchanges["requests"] as? [[String: Any]])?.first ?? [:]
        #expect(first["audience"] as? [String] == ["https://api.example"], "\(exchanges)")

        // Renewed with nobody asking, each time by a new exchange.
        let renewed = try await waitUntil(within: 30) {
            (try await Self.metadata(harness, "reports-api"))["generation"] as? Int ?? 0 >= 3
        }
        #expect(renewed)
        let count = try await server.hook("GET", "/test/exchanges")["count"] as? Int ?? 0
        #expect(count >= 3, "\(count) exchanges")
        let derived = try await Self.http(harness.socket, "GET", "/v1/credentials/machines/reports-api/token").json()
        let own = try await Self.http(harness.socket, "GET", "/v1/credentials/machines/reports/token").json()
        #expect(
            derived["access_token"] as? String != nil
                && derived["access_token"] as? String != own["access_token"] as? String)

        // An audience the server does not serve, and a subject that does not exist.
        let refused = try await Self.http(
            harness.socket, "PUT", "/v1/credentials/machines/elsewhere",
            body:
                #"{"provider": "authlib", "grant": {"type": "token_exchange", "subject": "machines/reports", "audience": "https://other.example"}}"#
        )
        #expect(refused.status == 422 && refused.text.contains("invalid_target"), "\(refused.text)")
        let missing = try await Self.http(
            harness.socket, "PUT", "/v1/credentials/machines/elsewhere",
            body:
                #"{"provider": "authlib", "grant": {"type": "token_exchange", "subject": "machines/none", "audience": "https://api.example"}}"#
        )
        #expect(missing.status == 400 && missing.json()["field"] as? String == "grant.subject", "\(missing.text)")
        let absent = try await Self.http(harness.socket, "GET", "/v1/credentials/machines/elsewhere")
        #expect(absent.status == 404)
        // The subject stored again as derived from its derived credential would renew both from
        // each other's tokens: refused.
        let cycle = try await Self.http(
            harness.socket, "PUT", "/v1/credentials/machines/reports",
            body:
                #"{"provider": "authlib", "grant": {"type": "token_exchange", "subject": "machines/reports-api", "audience": "https://api.example"}}"#
        )
        #expect(cycle.status == 400 && cycle.text.contains("cycle"), "\(cycle.text)")
    }
}
