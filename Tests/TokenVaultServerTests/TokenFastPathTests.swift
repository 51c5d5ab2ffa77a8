import Foundation
import Testing
import TokenVaultCore
import TokenVaultServer
import TokenVaultTesting

/// The event-loop fast path for `GET .../token` over a real socket: it answers exactly what
/// the router would, leaves every other case to the router, and keeps the connection's
/// behaviour (order of pipelined responses, idle timeout, graceful shutdown).
@Suite struct TokenFastPathTests {
    /// `name{labels} value` from a Prometheus exposition, 0 when absent.
    static func sample(_ exposition: String, _ series: String) -> Double {
        exposition.split(separator: "\n").first { $0.hasPrefix(series + " ") }
            .flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }

    static func fastPathCounts(_ server: TestServer) async throws -> (answered: Double, routed: Double) {
        let text = try await server.request("GET", "/metrics").text
        return (
            sample(text, #"tokenvault_http_token_fast_path_total{outcome="answered"}"#),
            sample(text, #"tokenvault_http_token_fast_path_total{outcome="routed"}"#)
        )
    }

    static func keepAlive(_ server: TestServer, _ requests: [String]) async throws -> [RawHTTPResponse] {
        let socketPath = server.socketPath
        return try await offThePool {
            let connection = try UnixSocketConnection(path: socketPath)
            return try requests.map { request in
                try connection.send(request)
                guard let response = try connection.readResponse() else { throw SocketTestError("closed early") }
                return response
            }
        }
    }

    static func get(_ target: String, headers: String = "") -> String {
        "GET \(target) HTTP/1.1\r\nHost: x\r\n\(headers)\r\n"
    }

    @Test func answersExactlyWhatTheRouterAnswers() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let sample = SamplePayloads.oauth()
            #expect(
                try await server.request(
                    "PUT", "/v1/credentials/pay/alice", body: server.putBody(provider: "oauth2", token: sample.json)
                ).status == 201)

            // A `Connection` header sends the request to the router; the same read without it is
            // answered on the event loop.
            let target = "/v1/credentials/pay/alice/token?min_ttl=60"
            let responses = try await Self.keepAlive(
                server, [Self.get(target, headers: "Connection: keep-alive\r\n"), Self.get(target)])
            let (routed, fast) = (responses[0], responses[1])
            #expect(try await Self.fastPathCounts(server) == (answered: 1, routed: 1))

            #expect(fast.status == 200 && routed.status == 200)
            #expect(fast.body == routed.body, "the same document, byte for byte")
            #expect(fast.json()["access_token"] as? String == sample.tokens[0])
            #expect(fast.json()["id_token"] as? String == sample.tokens[2])
            #expect(fast.json()["token_type"] as? String == "Bearer")
            #expect(fast.json()["expires_at"] is String)
            #expect(!fast.text.contains(sample.tokens[1]), "never the refresh token")
            #expect(Set(fast.headers.keys) == Set(routed.headers.keys))
            for name in ["content-type", "cache-control", "server", "content-length"] {
                #expect(fast.headers[name] == routed.headers[name], "\(name)")
            }
            #expect(fast.headers["x-request-id"].map { !$0.isEmpty && $0 != routed.headers["x-request-id"] } == true)
            #expect(fast.headers["date"]?.hasSuffix(" GMT") == true)

            await server.audit.flush()
            let reads = try await server.fixture.database.auditEvents(after: nil, credentialID: nil, limit: 100).filter
            {
                $0.event.operation == "token.read"
            }
            // Both reads came from this process: one aggregated row that counts two.
            #expect(reads.count == 1 && reads.allSatisfy { $0.event.outcome == .allowed && $0.event.pid == getpid() })
            #expect(reads.first?.event.count == 2 && reads.first?.event.lastAt != nil)
            let metrics = try await server.request("GET", "/metrics").text
            #expect(
                Self.sample(
                    metrics,
                    #"tokenvault_http_requests_total{route="/v1/credentials/{namespace}/{name}/token",method="GET",code="200"}"#
                ) == 2)
        }
    }

    @Test func refusalsRefreshesAndMissingCredentialsGoToTheRouter() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let sample = SamplePayloads.tinkoff()  // lasts 1,800 s
            _ = try await server.request("PUT", "/v1/credentials/pay/alice", body: server.putBody(token: sample.json))
            let responses = try await Self.keepAlive(
                server,
                [
                    Self.get("/v1/credentials/pay/alice/token?min_ttl=3600"),  // refresh due, then too short
                    Self.get("/v1/credentials/pay/nobody/token"),
                    Self.get("/v1/credentials/pay/alice/token?min_ttl=-1"),  // not taken at all: 400
                    Self.get("/v1/credentials/pay/alice/token"),
                ])
            #expect(responses.map(\.status) == [409, 404, 400, 200])
            #expect(responses[0].json()["code"] as? String == "min_ttl_unreachable")
            #expect(responses[1].json()["code"] as? String == "credential_not_found")
            #expect(responses[2].json()["field"] as? String == "min_ttl")
            #expect(try await Self.fastPathCounts(server) == (answered: 1, routed: 2))
            await server.audit.flush()
            let summary = try await server.fixture.database.auditEvents(after: nil, credentialID: nil, limit: 100).map {
                "\($0.event.operation) \($0.event.outcome.rawValue) \($0.event.detail ?? "-")"
            }
            #expect(
                summary.contains("token.read failed min_ttl_unreachable") && summary.contains("token.read allowed -"))
        }
    }

    @Test func aTokenReadWithABodyIsRouted() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            _ = try await server.request(
                "PUT", "/v1/credentials/pay/alice", body: server.putBody(token: SamplePayloads.tinkoff().json))
            let responses = try await Self.keepAlive(
                server,
                [
                    "GET /v1/credentials/pay/alice/token HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
                    Self.get("/v1/credentials/pay/alice/token"),
                ])
            #expect(
                responses.map(\.status) == [200, 200], "the router ignores the body; the next read is answered here")
            #expect(responses[0].body == responses[1].body)
            #expect(try await Self.fastPathCounts(server) == (answered: 1, routed: 1))
        }
    }

    @Test func aPeerWithoutTheRightIsDeniedAndAudited() async throws {
        let server = try await TestServer(policy: TestServer.policyAllowingOnlyNamespaceAllowed())
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let body = server.putBody(token: SamplePayloads.tinkoff().json)
            #expect(try await server.request("PUT", "/v1/credentials/allowed/a", body: body).status == 201)
            _ = try await server.fixture.vault.put(
                try CredentialID("other/a"), payload: SamplePayloads.decode(SamplePayloads.tinkoff().json),
                provider: "tinkoff-id")
            let responses = try await Self.keepAlive(
                server, [Self.get("/v1/credentials/other/a/token"), Self.get("/v1/credentials/allowed/a/token")])
            #expect(responses.map(\.status) == [403, 200])
            #expect(responses[0].json()["permission"] as? String == "token:read")
            await server.audit.flush()
            let summary = try await server.fixture.database.auditEvents(after: nil, credentialID: nil, limit: 100).map {
                "\($0.event.operation) \($0.event.credentialID?.description ?? "-") \($0.event.outcome.rawValue)"
            }
            #expect(summary.contains("token.read other/a denied") && summary.contains("token.read allowed/a allowed"))
        }
    }

    @Test func pipelinedResponsesKeepTheirOrder() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let sample = SamplePayloads.tinkoff()
            _ = try await server.request("PUT", "/v1/credentials/pay/alice", body: server.putBody(token: sample.json))
            let socketPath = server.socketPath
            // Sent in one write: routed requests first, then reads the fast path could answer at once.
            let statuses = try await offThePool {
                let connection = try UnixSocketConnection(path: socketPath)
                try connection.send(
                    Self.get("/v1/health") + Self.get("/v1/credentials/pay/alice/token?min_ttl=3600")
                        + Self.get("/v1/credentials/pay/alice/token") + Self.get("/v1/credentials/pay/alice/token"))
                return try connection.readResponses(4).map { response -> String in
                    "\(response.status) \(response.json()["status"] as? String ?? response.json()["code"] as? String ?? (response.json()["access_token"] != nil ? "token" : "?"))"
                }
            }
            #expect(statuses == ["200 ok", "409 min_ttl_unreachable", "200 token", "200 token"])
        }
    }

    @Test func requestsArrivingInPiecesAreAnsweredInOrderOnceComplete() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            _ = try await server.request(
                "PUT", "/v1/credentials/pay/alice", body: server.putBody(token: SamplePayloads.tinkoff().json))
            let put = server.putBody(token: SamplePayloads.tinkoff().json)
            let stream =
                Self.get("/v1/credentials/pay/alice/token")
                + "PUT /v1/credentials/pay/bob HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(put.utf8.count)\r\n\r\n\(put)" + Self.get("/v1/credentials/pay/bob/token")
            let socketPath = server.socketPath
            let statuses = try await offThePool {
                let connection = try UnixSocketConnection(path: socketPath)
                // Pieces of 7 bytes: heads, the body and the boundaries between requests all split.
                var rest = Substring(stream)
                while !rest.isEmpty {
                    try connection.send(String(rest.prefix(7)))
                    rest = rest.dropFirst(7)
                    usleep(200)
                }
                return try (0..<3).map { _ in try connection.readResponse()?.status ?? 0 }
            }
            #expect(statuses == [200, 201, 200])
            // Bob's read is routed if it completes while the router still owes the PUT's response.
            let counts = try await Self.fastPathCounts(server)
            #expect(counts.answered >= 1 && counts.answered + counts.routed == 2)
        }
    }

    @Test func aRequestTheFastPathCannotDelimitLeavesTheConnectionToTheDecoder() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            _ = try await server.request(
                "PUT", "/v1/credentials/pay/alice", body: server.putBody(token: SamplePayloads.tinkoff().json))
            let put = server.putBody(token: SamplePayloads.tinkoff().json)
            let chunked =
                "PUT /v1/credentials/pay/bob HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n\(String(put.utf8.count, radix: 16))\r\n\(put)\r\n0\r\n\r\n"
            let socketPath = server.socketPath
            let statuses = try await offThePool {
                let connection = try UnixSocketConnection(path: socketPath)
                try connection.send(chunked + Self.get("/v1/credentials/pay/alice/token"))
                var statuses = try (0..<2).map { _ in try connection.readResponse()?.status ?? 0 }
                try connection.send(Self.get("/v1/credentials/pay/bob/token"))
                statuses.append(try connection.readResponse()?.status ?? 0)
                return statuses
            }
            #expect(statuses == [201, 200, 200], "the chunked PUT and every read after it, all by the router")
            #expect(try await Self.fastPathCounts(server) == (answered: 0, routed: 0))
        }
    }

    @Test func aHeadThatNeverCompletesIsClosedAfterTheIdleTimeout() async throws {
        let server = try await TestServer(idleTimeoutSeconds: 1)
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let socketPath = server.socketPath
            let closed = try await offThePool {
                let connection = try UnixSocketConnection(path: socketPath)
                try connection.send("GET /v1/credentials/pay/alice/tok")
                return connection.waitForClose(timeout: 10)
            }
            #expect(closed)
        }
    }

    @Test func busyConnectionOutlivesTheIdleTimeoutAndIdleOneIsClosed() async throws {
        let server = try await TestServer(idleTimeoutSeconds: 2)
        try await withStopping(server, stop: { await $0.stop() }) { server in
            _ = try await server.request(
                "PUT", "/v1/credentials/pay/alice", body: server.putBody(token: SamplePayloads.tinkoff().json))
            let socketPath = server.socketPath
            let (statuses, closed) = try await offThePool {
                let connection = try UnixSocketConnection(path: socketPath)
                var statuses: [Int] = []
                for _ in 0..<10 {  // 3 s of reads, each 0.3 s after the last
                    try connection.send(Self.get("/v1/credentials/pay/alice/token"))
                    statuses.append(try connection.readResponse()?.status ?? 0)
                    usleep(300_000)
                }
                return (statuses, connection.waitForClose(timeout: 10))
            }
            #expect(statuses == Array(repeating: 200, count: 10), "requests answered on the loop count as activity")
            #expect(closed, "once quiet, the connection is closed after the idle timeout")
            #expect(try await Self.fastPathCounts(server).answered >= 10)
        }
    }

    @Test(.timeLimit(.minutes(1))) func gracefulShutdownClosesAnOpenKeepAliveConnection() async throws {
        let server = try await TestServer()
        _ = try await server.request(
            "PUT", "/v1/credentials/pay/alice", body: server.putBody(token: SamplePayloads.tinkoff().json))
        let connection = try UnixSocketConnection(path: server.socketPath)
        try connection.send(Self.get("/v1/credentials/pay/alice/token"))
        #expect(try connection.readResponse()?.status == 200)
        await server.stop()
        #expect(connection.waitForClose(timeout: 5))
    }
}
