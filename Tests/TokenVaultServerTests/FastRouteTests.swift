import Foundation
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultServer

/// The event loop's answers to a health check, a credential's metadata and a path no route has:
/// the same status, document and headers as the router's (a `Connection` header sends the same
/// request to the router), the router's metric series, and the router's answer whenever a rule
/// needs it.
@Suite struct FastRouteTests {
    static func answered(_ server: TestServer, _ route: String) async throws -> Double {
        TokenFastPathTests.sample(
            try await server.request("GET", "/metrics").text,
            #"tokenvault_http_fast_path_answers_total{route=""# + route + #""}"#)
    }

    /// The routed answer, then the event loop's, on one connection.
    static func bothWays(_ server: TestServer, _ target: String) async throws -> (
        routed: RawHTTPResponse, fast: RawHTTPResponse
    ) {
        let responses = try await TokenFastPathTests.keepAlive(
            server,
            [
                TokenFastPathTests.get(target, headers: "Connection: keep-alive\r\n"),
                TokenFastPathTests.get(target),
            ])
        return (responses[0], responses[1])
    }

    static func expectSameHead(_ routed: RawHTTPResponse, _ fast: RawHTTPResponse) {
        #expect(routed.status == fast.status)
        #expect(Set(fast.headers.keys) == Set(routed.headers.keys))
        for name in ["content-type", "server"] { #expect(fast.headers[name] == routed.headers[name], "\(name)") }
        #expect(fast.headers["x-request-id"].map { !$0.isEmpty && $0 != routed.headers["x-request-id"] } == true)
    }

    @Test func healthIsAnsweredOnTheLoopWhileTheDatabasesAnswerIsRecent() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let (routed, fast) = try await Self.bothWays(server, "/v1/health")
            #expect(routed.status == 200)
            Self.expectSameHead(routed, fast)
            var (routedDocument, fastDocument) = (routed.json(), fast.json())
            #expect(routedDocument.removeValue(forKey: "uptime_seconds") != nil)
            #expect(fastDocument.removeValue(forKey: "uptime_seconds") != nil)
            #expect(NSDictionary(dictionary: routedDocument) == NSDictionary(dictionary: fastDocument))
            #expect(try await Self.answered(server, "/v1/health") == 1)
            let metrics = try await server.request("GET", "/metrics").text
            #expect(
                TokenFastPathTests.sample(
                    metrics, #"tokenvault_http_requests_total{route="/v1/health",method="GET",code="200"}"#) == 2)
        }
    }

    @Test func metadataIsAnsweredOnTheLoopAndAudited() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let body = server.putBody(provider: "oauth2", token: SamplePayloads.oauth().json)
            #expect(try await server.request("PUT", "/v1/credentials/pay/alice", body: body).status == 201)
            let (routed, fast) = try await Self.bothWays(server, "/v1/credentials/pay/alice")
            #expect(routed.status == 200)
            Self.expectSameHead(routed, fast)
            #expect(fast.body == routed.body, "the same document, byte for byte")
            #expect(try await Self.answered(server, "/v1/credentials/{namespace}/{name}") == 1)
            // A credential that is not there: the router's 404, not the loop's.
            #expect(try await Self.bothWays(server, "/v1/credentials/pay/nobody").fast.status == 404)
            #expect(try await Self.answered(server, "/v1/credentials/{namespace}/{name}") == 1)
            await server.audit.flush()
            let shows = try await server.fixture.database.auditEvents(after: nil, credentialID: nil, limit: 100).filter
            {
                $0.event.operation == "credential.show" && $0.event.outcome == .allowed
            }
            #expect(shows.count == 2)
        }
    }

    @Test func aCallerWithoutTheRightIsRefusedByTheRouter() async throws {
        let server = try await TestServer(policy: TestServer.policyAllowingOnlyNamespaceAllowed())
        try await withStopping(server, stop: { await $0.stop() }) { server in
            _ = try await server.fixture.vault.put(
                try CredentialID("other/a"), payload: SamplePayloads.decode(SamplePayloads.tinkoff().json),
                provider: "tinkoff-id")
            let (routed, fast) = try await Self.bothWays(server, "/v1/credentials/other/a")
            #expect(routed.status == 403 && fast.status == 403)
            #expect(try await Self.answered(server, "/v1/credentials/{namespace}/{name}") == 0)
        }
    }

    /// Every route the router has, with its parameters filled in: never a path the loop calls
    /// unmatched.
    @Test func noRegisteredRouteIsCalledUnmatched() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let templates = server.api.routes.templates
            #expect(templates.count > 20)
            for template in templates {
                let path = template.split(separator: "/").map { segment in
                    segment == "**" ? "a/b" : segment.contains("{") || segment.hasPrefix(":") ? "x" : String(segment)
                }.joined(separator: "/")
                var concrete = "/" + path
                let target = concrete.withUTF8 {
                    FastTarget(bytes: UnsafeRawBufferPointer($0), routes: server.api.routes)
                }
                if case .unmatched = target { Issue.record("\(concrete) (\(template)) was called unmatched") }
            }
        }
    }

    @Test func aPathNoRouteHasGetsTheRoutersNotFound() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let (routed, fast) = try await Self.bothWays(server, "/v1/no-such-route")
            #expect(routed.status == 404)
            Self.expectSameHead(routed, fast)
            var (routedDocument, fastDocument) = (routed.json(), fast.json())
            #expect(routedDocument.removeValue(forKey: "instance") as? String != nil)
            #expect(
                fastDocument.removeValue(forKey: "instance") as? String
                    == "urn:tokenvault:request:\(fast.headers["x-request-id"] ?? "")")
            #expect(NSDictionary(dictionary: routedDocument) == NSDictionary(dictionary: fastDocument))
            #expect(try await Self.answered(server, "NotFound") == 1)

            // Paths some route has, with another method or under `**`, and odd paths: the router's.
            let others = try await TokenFastPathTests.keepAlive(
                server,
                [
                    TokenFastPathTests.get("/v1/admin/rotate-key"),
                    TokenFastPathTests.get("/v1/credentials/pay/alice/proxy/some/path"),
                    TokenFastPathTests.get("/v1/no-such-route?x=1"),
                    TokenFastPathTests.get("/v1/%6Eo"),
                    TokenFastPathTests.get("/v1/../v1/health"),
                ])
            #expect(others[0].status == 405 && others[0].headers["allow"] == "POST")
            #expect(others[1].status != 404 || others[1].json()["code"] as? String != "not_found")
            #expect(try await Self.answered(server, "NotFound") == 1, "none of them answered on the loop")
            let metrics = try await server.request("GET", "/metrics").text
            #expect(
                TokenFastPathTests.sample(
                    metrics, #"tokenvault_http_requests_total{route="NotFound",method="GET",code="404"}"#) == 5,
                "the router's series, for its four and the loop's one")
        }
    }
}
