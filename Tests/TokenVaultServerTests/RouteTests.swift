import Foundation
import Testing
import TokenVaultCore
import TokenVaultServer
import TokenVaultTesting

@Suite struct RouteTests {
    @Test func credentialLifecycleOverTheSocket() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let sample = SamplePayloads.tinkoff()
            let created = try await server.request(
                "PUT", "/v1/credentials/pay/alice", body: server.putBody(token: sample.json, labels: #"{"env":"dev"}"#))
            #expect(created.status == 201)
            #expect(created.headers["location"] == "/v1/credentials/pay/alice")
            #expect(created.json()["generation"] as? Int == 1)
            #expect(!created.text.contains(sample.tokens[0]) && !created.text.contains(sample.tokens[1]))
            let replaced = try await server.request(
                "PUT", "/v1/credentials/pay/alice", body: server.putBody(token: sample.json))
            #expect(replaced.status == 200 && replaced.json()["generation"] as? Int == 2)

            let token = try await server.request("GET", "/v1/credentials/pay/alice/token?min_ttl=60")
            #expect(token.status == 200)
            #expect(token.json()["access_token"] as? String == sample.tokens[0])
            #expect(token.headers["cache-control"] == "no-store")
            #expect(!token.text.contains(sample.tokens[1]), "the refresh token never leaves the vault")
            let tooShort = try await server.request("GET", "/v1/credentials/pay/alice/token?min_ttl=3600")
            // Its tokens live 1,800 s as issued: no refresh can meet min_ttl=3600, and the answer says so.
            #expect(tooShort.status == 409 && tooShort.json()["code"] as? String == "min_ttl_unreachable")

            let metadata = try await server.request("GET", "/v1/credentials/pay/alice")
            #expect(metadata.json()["has_refresh_token"] as? Bool == true)
            #expect(metadata.json()["labels"] as? [String: String] == [:])

            let deleted = try await server.request("DELETE", "/v1/credentials/pay/alice")
            #expect(deleted.status == 204)
            #expect(try await server.request("GET", "/v1/credentials/pay/alice").status == 404)
        }
    }

    @Test func listingIsPaginatedWithACursor() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            for index in 0..<5 {
                _ = try await server.request(
                    "PUT", "/v1/credentials/ns/c\(index)", body: server.putBody(token: SamplePayloads.tinkoff().json))
            }
            var cursor: String?
            var seen: [String] = []
            repeat {
                let page = try await server.request(
                    "GET", "/v1/credentials?namespace=ns&limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
                ).json()
                seen += (page["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
                cursor = page["next_cursor"] as? String
            } while cursor != nil
            #expect(seen == ["ns/c0", "ns/c1", "ns/c2", "ns/c3", "ns/c4"])
        }
    }

    @Test(arguments: [
        ("{\"provider\": \"tinkoff-id\", \"token\": ", 400, "invalid_payload", nil as String?),
        (
            #"{"provider": "tinkoff-id", "token": {"access_token": "a", "expires_in": "soon"}}"#, 400, "invalid_field",
            "token.expires_in"
        ),
        (#"{"provider": "tinkoff-id", "token": {"access_token": 5}}"#, 400, "invalid_field", "token.access_token"),
        (#"{"provider": 5, "token": {"access_token": "a"}}"#, 400, "invalid_field", "provider"),
        (#"{"provider": "tinkoff-id", "token": {"access_token": "a"}, "extra": 1}"#, 400, "invalid_field", "extra"),
        (#"{"provider": "tinkoff-id", "labels": [1], "token": {"access_token": "a"}}"#, 400, "invalid_field", "labels"),
        (#"{"provider": "unknown-bank", "token": {"access_token": "a"}}"#, 422, "unknown_provider", nil),
        (#"{"provider": "tinkoff-id"}"#, 400, "invalid_field", "token"),
    ])
    func badInputIsRefusedAndChangesNothing(_ body: String, _ status: Int, _ code: String, _ field: String?)
        async throws
    {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let response = try await server.request("PUT", "/v1/credentials/ns/x", body: body)
            #expect(response.status == status, "\(response.text)")
            #expect(response.headers["content-type"] == "application/problem+json")
            #expect(response.json()["code"] as? String == code)
            #expect(response.json()["field"] as? String == field)
            #expect(response.headers["x-request-id"] != nil)
            #expect(try await server.request("GET", "/v1/credentials/ns/x").status == 404)
        }
    }

    @Test func invalidIDsMissingCredentialsAndUnknownRoutes() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let invalid = try await server.request("GET", "/v1/credentials/ns/.hidden")
            #expect(invalid.status == 400 && invalid.json()["code"] as? String == "invalid_credential_id")
            let missing = try await server.request("GET", "/v1/credentials/ns/nobody/token")
            #expect(missing.status == 404 && missing.json()["code"] as? String == "credential_not_found")
            let unknown = try await server.request("GET", "/v2/nothing")
            #expect(unknown.status == 404 && unknown.json()["code"] as? String == "not_found")
            let exchange = try await server.request(
                "POST", "/v1/credentials/ns/x/exchange",
                body:
                    #"{"provider": "oauth2", "code": "c", "code_verifier": "\#(String(repeating: "v", count: 43))", "redirect_uri": "https://a.test/cb"}"#
            )
            #expect(
                exchange.status == 422 && exchange.json()["code"] as? String == "provider_rejected", "\(exchange.text)")
            #expect(try await server.request("GET", "/v1/credentials/ns/x").status == 404)
        }
    }

    /// A code exchange on an instance without a token endpoint is the caller's to fix (another
    /// instance), not a provider's refusal: 422 `provider_not_configured`, with its title.
    @Test func anExchangeOnAnInstanceWithoutATokenEndpointSaysSo() async throws {
        let server = try await TestServer(makeEngine: { fixture in
            var stub = StubRefreshService(vault: fixture.vault)
            stub.redeemFailure = ProviderFailure.notConfigured("oauth2")
            return stub
        })
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let exchange = try await server.request(
                "POST", "/v1/credentials/ns/x/exchange",
                body:
                    #"{"provider": "oauth2", "code": "c", "code_verifier": "\#(String(repeating: "v", count: 43))", "redirect_uri": "https://a.test/cb"}"#
            )
            #expect(exchange.status == 422, "\(exchange.text)")
            #expect(exchange.json()["code"] as? String == "provider_not_configured")
            #expect(exchange.json()["title"] as? String == "Provider not configured")
            #expect((exchange.json()["detail"] as? String)?.contains("no token endpoint") == true)
        }
    }

    @Test func bodyLimitGives413() async throws {
        let server = try await TestServer(maximumBodySize: 2048)
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let big = server.putBody(token: "{\"access_token\": \"\(String(repeating: "a", count: 4000))\"}")
            let response = try await server.request("PUT", "/v1/credentials/ns/x", body: big)
            #expect(response.status == 413 && response.json()["code"] as? String == "payload_too_large")
        }
    }

    @Test func healthMetricsAndAdmin() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let health = try await server.request("GET", "/v1/health").json()
            #expect(health["status"] as? String == "ok")
            #expect((health["database"] as? [String: Any])?["schema_version"] as? Int == 10)
            let providers = health["providers"] as? [[String: Any]]
            #expect(providers?.first?["condition"] as? String == "ok")
            _ = try await server.request(
                "PUT", "/v1/credentials/ns/a", body: server.putBody(token: SamplePayloads.oauth().json))
            _ = try await server.request("GET", "/v1/credentials/ns/a/token")

            let metrics = try await server.request("GET", "/metrics")
            #expect(metrics.headers["content-type"]?.hasPrefix("text/plain") == true)
            #expect(
                metrics.text.contains(
                    #"tokenvault_http_requests_total{route="/v1/credentials/{namespace}/{name}/token""#))
            #expect(metrics.text.contains(#"tokenvault_credentials{status="active"} 1"#))  // printed as 1.0
            #expect(metrics.text.contains("tokenvault_http_request_duration_seconds_bucket"))
            #expect(!metrics.text.contains("ns/a"), "ids never become metric labels")

            let rotation = try await server.request("POST", "/v1/admin/rotate-key").json()
            #expect(rotation["new_term"] as? Int == 2 && rotation["resealed"] as? Int == 1)
            let audit = try await server.request("GET", "/v1/admin/audit?credential=ns/a").json()
            let operations = (audit["items"] as? [[String: Any]] ?? []).compactMap { $0["operation"] as? String }
            #expect(operations == ["token.read", "credential.put"], "newest first")
            let backup = try await server.request("POST", "/v1/admin/backup").json()
            let path = try #require(backup["path"] as? String)
            #expect(FileManager.default.fileExists(atPath: path))
            #expect((backup["bytes"] as? Int ?? 0) > 0)
        }
    }
}
