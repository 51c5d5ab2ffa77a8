import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultServer

/// What only the event loop's proxy path (`ProxyFastCall`, started by `TokenFastPath`) has to get
/// right: answers in the requests' order when calls, token reads and routed requests are
/// pipelined on one connection, answers framed by the daemon itself, and kept upstream
/// connections the upstream has dropped. (`ProxyTests` runs every proxy behaviour on both paths.)
@Suite struct ProxyFastPathTests {
    /// A server whose `oauth2` instance lists `bases`, with the credential `ns/a`, and the
    /// caller's groups learnt (so plain calls take the event loop's path).
    private static func server(
        bases: [String], configure: (inout VaultAPI.Options) -> Void = { _ in }
    ) async throws -> TestServer {
        let server = try await TestServer(configure: configure)
        var settings = ProviderSettings(name: "oauth2", kind: "oauth2")
        settings.apiBases = try bases.map { try APIBase(parsing: $0 + "/") }
        server.fixture.vault.install(ProviderTable(settings: ["oauth2": settings]))
        _ = try await server.fixture.vault.put(
            try CredentialID("ns/a"), payload: try SamplePayloads.decode(SamplePayloads.oauth().json),
            provider: "oauth2")
        _ = try await server.request("GET", "/v1/proxy/credentials")
        return server
    }

    /// A `TestUpstream` and a server whose instance lists it, stopped after `body`.
    private static func withServerAndUpstream(
        configure: (inout VaultAPI.Options) -> Void = { _ in }, _ body: (TestServer, TestUpstream) async throws -> Void
    ) async throws {
        let upstream = try await TestUpstream()
        let server = try await server(bases: [upstream.base], configure: configure)
        try await withStopping(
            server,
            stop: {
                await $0.stop()
                await upstream.stop()
            }
        ) { server in try await body(server, upstream) }
    }

    /// GETs of `targets` written at once on one connection, and their answers.
    private static func pipelined(_ server: TestServer, _ targets: [String]) async throws -> [RawHTTPResponse] {
        let socketPath = server.socketPath
        return try await offThePool {
            let connection = try UnixSocketConnection(path: socketPath)
            try connection.send(targets.map { TokenFastPathTests.get($0) }.joined())
            return try connection.readResponses(targets.count, timeout: 30)
        }
    }

    private static func credentialID(inProxyPath path: String) -> CredentialID? {
        var path = path
        return path.withUTF8 { FastTarget.proxyCredentialID(UnsafeRawBufferPointer($0)) }
    }

    /// The credential a proxied path names, read from its bytes.
    @Test func theCredentialIsReadFromTheProxyPath() throws {
        let named = try CredentialID("ns/a")
        for path in ["/v1/credentials/ns/a/proxy", "/v1/credentials/ns/a/proxy/x/y", "/v1/credentials/ns/a/proxy?x=/1"]
        {
            #expect(Self.credentialID(inProxyPath: path) == named, "\(path)")
        }
        for path in [
            "/v1/credentials/ns/a/proxyx", "/v1/credentials/ns/a/token", "/v1/credentials/ns/proxy",
            "/v1/credentials//a/proxy", "/v2/credentials/ns/a/proxy", "/v1/credentials/ns/a/b/proxy",
        ] {
            #expect(Self.credentialID(inProxyPath: path) == nil, "\(path)")
        }
    }

    /// The route a call is recorded under, as splitting the path would give it.
    @Test func callsAreRecordedUnderTheRouterTemplates() {
        func split(_ path: String) -> String {
            let segments = path.split(separator: "?", maxSplits: 1).first.map { $0.split(separator: "/", maxSplits: 5) }
            return (segments?.count ?? 0) > 5
                ? "/v1/credentials/{namespace}/{name}/proxy/**" : "/v1/credentials/{namespace}/{name}/proxy"
        }
        for path in [
            "/v1/credentials/ns/a/proxy", "/v1/credentials/ns/a/proxy/", "/v1/credentials/ns/a/proxy/x",
            "/v1/credentials/ns/a/proxy?x=/y", "/v1/credentials/ns/a/proxy/?x", "/v1/credentials/ns/a/proxy//",
            "/v1/credentials/ns/a/proxy/x/y?z", "//v1/credentials/ns/a/proxy/x", "/v1/credentials/ns/a/proxy/x/",
        ] {
            #expect(ProxyFastCall.route(of: path) == split(path), "\(path)")
        }
        #expect(ProxyFastCall.route(of: "/v1/credentials/ns/a/proxy/x").hasSuffix("/**"))
    }

    @Test func pipelinedCallsReadsAndRoutedRequestsAreAnsweredInOrder() async throws {
        try await Self.withServerAndUpstream { server, upstream in
            // One write: a token read (answered before the decoder), a call held upstream for a
            // second, a routed request behind it, and another call behind that.
            let answers = try await Self.pipelined(
                server,
                [
                    "/v1/credentials/ns/a/token", "/v1/credentials/ns/a/proxy/hold?seconds=1", "/v1/health",
                    "/v1/credentials/ns/a/proxy/echo?n=2",
                ]
            ).map { response -> String in
                let json = response.json()
                let what =
                    json["access_token"] != nil
                    ? "token" : (json["path"] as? String ?? json["status"] as? String ?? response.text)
                return "\(response.status) \(what)"
            }
            #expect(answers[0] == "200 token", "\(answers)")
            #expect(answers[1].hasPrefix("200"), "\(answers)")
            #expect(answers[2] == "200 ok", "\(answers)")
            #expect(answers[3] == "200 /echo?n=2", "\(answers)")
            #expect(upstream.received == ["GET /hold?seconds=1", "GET /echo?n=2"])
            let metrics = try await server.request("GET", "/metrics").text
            #expect(metrics.contains(#"tokenvault_http_proxy_fast_path_total{outcome="answered"} 1"#), "\(metrics)")
        }
    }

    /// The event loop writes a proxied answer's bytes itself: framed by the upstream's
    /// `Content-Length`, chunked without one, with no body and no framing for 204 and 304. Each
    /// answer ends exactly where the next begins on one connection.
    @Test func answersAreFramedSoThatTheNextOneFollows() async throws {
        try await Self.withServerAndUpstream { server, upstream in
            let answers = try await Self.pipelined(
                server,
                [
                    "/v1/credentials/ns/a/proxy/status?code=204", "/v1/credentials/ns/a/proxy/stream?bytes=70000",
                    "/v1/credentials/ns/a/proxy/status?code=304", "/v1/credentials/ns/a/proxy/echo",
                    "/v1/credentials/ns/a/token",
                ])
            #expect(answers.map(\.status) == [204, 200, 304, 200, 200])
            #expect(answers[0].headers["transfer-encoding"] == nil && answers[0].body.isEmpty)
            #expect(answers[1].headers["transfer-encoding"] == "chunked" && answers[1].body.count == 70000)
            #expect(answers[2].headers["transfer-encoding"] == nil && answers[2].body.isEmpty)
            #expect(answers[3].headers["content-length"] == String(answers[3].body.count))
            #expect(answers[4].json()["access_token"] != nil)
            #expect(upstream.received.count == 4)
            let metrics = try await server.request("GET", "/metrics").text
            #expect(metrics.contains(#"tokenvault_http_proxy_fast_path_total{outcome="answered"} 4"#))
        }
    }

    /// A request written while a call is made waits for the call's end without its head's clock
    /// running: `limits.request_head_seconds` is not the call's limit.
    @Test func aRequestBehindALongCallIsNotTimedOutWaiting() async throws {
        try await Self.withServerAndUpstream(configure: { $0.connections.requestHeadSeconds = 1 }) { server, _ in
            let socketPath = server.socketPath
            let answers = try await offThePool {
                let connection = try UnixSocketConnection(path: socketPath)
                try connection.send(TokenFastPathTests.get("/v1/credentials/ns/a/proxy/hold?seconds=2.5"))
                Thread.sleep(forTimeInterval: 0.3)
                try connection.send(TokenFastPathTests.get("/v1/credentials/ns/a/token"))
                return try connection.readResponses(2, timeout: 30).map(\.status)
            }
            #expect(answers == [200, 200])
        }
    }

    /// `Connection: close` ends the connection with the answer, as on the router's path (the
    /// caller reading to the end would otherwise wait for the idle timeout).
    @Test func aCallerThatAsksForCloseHasItsConnectionClosedAfterTheAnswer() async throws {
        try await Self.withServerAndUpstream { server, upstream in
            let socketPath = server.socketPath
            let (status, closed) = try await offThePool {
                let connection = try UnixSocketConnection(path: socketPath)
                try connection.send(
                    "GET /v1/credentials/ns/a/proxy/echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                let answer = try connection.readResponse(timeout: 10)
                return (answer?.status, connection.waitForClose(timeout: 5))
            }
            #expect(status == 200)
            #expect(closed, "the connection stayed open")
            let metrics = try await server.request("GET", "/metrics").text
            #expect(metrics.contains(#"tokenvault_http_proxy_fast_path_total{outcome="answered"} 1"#), "\(metrics)")
        }
    }

    /// A caller that sends its request and closes its side (half-close) still gets the answer.
    @Test func aCallerThatHalfClosesGetsItsAnswer() async throws {
        try await Self.withServerAndUpstream { server, upstream in
            let socketPath = server.socketPath
            let status = try await offThePool {
                let connection = try UnixSocketConnection(path: socketPath)
                try connection.send(TokenFastPathTests.get("/v1/credentials/ns/a/proxy/hold?seconds=1"))
                shutdown(connection.descriptor, Int32(SHUT_WR))
                return try connection.readResponse(timeout: 10)?.status
            }
            #expect(status == 200)
            let metrics = try await server.request("GET", "/metrics").text
            #expect(metrics.contains(#"tokenvault_http_proxy_fast_path_total{outcome="answered"} 1"#), "\(metrics)")
            #expect(
                metrics.contains(
                    #"tokenvault_http_requests_total{route="/v1/credentials/{namespace}/{name}/proxy/**",method="GET",code="200"} 1"#
                ), "\(metrics)")
        }
    }

    /// An upstream that drops a kept connection when the next request arrives on it (as one
    /// whose idle timeout fires just then): a `GET` is sent once more on a new connection, a
    /// `POST` is not (the upstream may have acted on it) and gets 502.
    @Test func aKeptConnectionTheUpstreamDroppedIsReplacedOnceForARepeatableCall() async throws {
        let upstream = try DroppingUpstream()
        defer { upstream.stop() }
        let server = try await Self.server(bases: [upstream.base])
        try await withStopping(server, stop: { await $0.stop() }) { server in
            // One connection to the daemon: its calls share its event loop's upstream connections.
            let socketPath = server.socketPath
            let (answers, counts) = try await offThePool {
                let connection = try UnixSocketConnection(path: socketPath)
                var answers: [RawHTTPResponse] = []
                var counts: [(connections: Int, requests: Int)] = []
                for request in [
                    TokenFastPathTests.get("/v1/credentials/ns/a/proxy/one"),
                    TokenFastPathTests.get("/v1/credentials/ns/a/proxy/two"),
                    "POST /v1/credentials/ns/a/proxy/three HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
                ] {
                    try connection.send(request)
                    guard let answer = try connection.readResponse(timeout: 30) else {
                        throw SocketTestError("closed early")
                    }
                    answers.append(answer)
                    counts.append(upstream.counts)
                }
                return (answers, counts)
            }
            #expect(answers[0].status == 200 && answers[0].text == "ok", "\(answers[0].text)")
            #expect(answers[1].status == 200 && answers[1].text == "ok", "\(answers[1].text)")
            #expect(counts[1] == (connections: 2, requests: 3), "\(counts)")
            #expect(
                answers[2].status == 502 && answers[2].json()["code"] as? String == "upstream_unavailable",
                "\(answers[2].text)")
            #expect(counts[2] == (connections: 2, requests: 4), "\(counts)")
            let metrics = try await server.request("GET", "/metrics").text
            #expect(metrics.contains(#"tokenvault_http_proxy_fast_path_total{outcome="answered"} 3"#), "\(metrics)")
        }
    }
}

/// A loopback HTTP/1.1 server that answers the first request on each connection with `200 ok`
/// (kept alive) and closes the connection, unanswered, when a second request arrives on it.
private final class DroppingUpstream: Sendable {
    let port: Int
    var base: String { "http://127.0.0.1:\(port)" }
    var counts: (connections: Int, requests: Int) { state.lock.withLock { ($0.connections, $0.requests) } }

    private final class Shared: Sendable {
        struct State {
            var connections = 0
            var requests = 0
            var stopped = false
        }
        let lock = Mutex(State())
    }

    private let listener: Int32
    private let state = Shared()

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(listener, address, length) == 0 && listen(listener, 16) == 0
                    && getsockname(listener, address, &length) == 0
            }
        }
        guard bound else { throw SocketTestError("cannot listen: errno \(errno)") }
        port = Int(UInt16(bigEndian: address.sin_port))
        let state = state
        Thread.detachNewThread {
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0, !state.lock.withLock({ $0.stopped }) else { return }
                state.lock.withLock { $0.connections += 1 }
                Thread.detachNewThread { Self.serve(connection, state) }
            }
        }
    }

    private static func serve(_ connection: Int32, _ state: Shared) {
        defer { close(connection) }
        var received: [UInt8] = []
        var answered = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            received += buffer[..<count]
            // Heads only (the calls carry no body beyond `{}`, read with the head or ignored).
            while let end = received.firstRange(of: Array("\r\n\r\n".utf8)) {
                received.removeSubrange(..<end.upperBound)
                state.lock.withLock { $0.requests += 1 }
                if answered { return }
                answered = true
                let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
                _ = answer.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
        }
    }

    func stop() {
        state.lock.withLock { $0.stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
