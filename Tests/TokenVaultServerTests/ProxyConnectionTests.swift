import Foundation
import NIOCore
import NIOPosix
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultProviders
import TokenVaultServer
import TokenVaultTesting

/// What one proxied call can do to another: nothing. Kept upstream connections belong to one
/// credential and one caller, so a body an upstream leaves unread cannot be completed by
/// another caller's call; and a path that servers read differently is refused before anything
/// is sent.
@Suite struct ProxyConnectionTests {
    /// Caller A's body begins a second request (`GET /smuggled`, its header block left open);
    /// the upstream answers A's call without reading the body, so those bytes wait on the
    /// connection as the start of the next request. Caller B's next call, with another
    /// credential, must go on a connection of its own: its `Authorization` never lands in A's
    /// request.
    @Test func aBodyTheUpstreamLeftUnreadIsNeverCompletedByAnotherCallersCall() async throws {
        let upstream = try await BodyIgnoringUpstream.start()
        let server = try await TestServer()
        try await withStopping(
            server,
            stop: { server in
                await server.stop()
                try? await upstream.stop()
            }
        ) { server in
            var settings = ProviderSettings(name: "oauth2", kind: "oauth2")
            settings.apiBases = [try APIBase(parsing: "http://127.0.0.1:\(upstream.port)/")]
            server.fixture.vault.install(ProviderTable(settings: ["oauth2": settings]))
            var tokens: [String: String] = [:]
            for name in ["a", "b"] {
                let payload = SamplePayloads.oauth()
                tokens[name] = payload.tokens[0]
                _ = try await server.fixture.vault.put(
                    try CredentialID("ns/\(name)"), payload: try SamplePayloads.decode(payload.json),
                    provider: "oauth2")
            }
            let smuggled = "GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Smuggled: "
            let first = try await server.request("POST", "/v1/credentials/ns/a/proxy/ignore", body: smuggled)
            #expect(first.status == 200, "\(first.text)")
            for _ in 0..<3 {
                let second = try await server.request("GET", "/v1/credentials/ns/b/proxy/next")
                #expect(second.status == 200, "\(second.text)")
                #expect(second.text == "next", "B's call was answered as another request: \(second.text)")
            }
            let heads = upstream.heads
            let bearerOfB = "Bearer \(tokens["b"]!)"
            #expect(heads.filter { $0.authorization == bearerOfB }.allSatisfy { $0.line == "GET /next HTTP/1.1" })
            #expect(!heads.contains { $0.line.hasPrefix("GET /smuggled") && $0.authorization == bearerOfB }, "\(heads)")
            #expect(heads.filter { $0.line == "GET /next HTTP/1.1" }.count == 3, "\(heads)")
        }
    }

    /// Clients are kept per instance, credential and caller: the same owner gets the same client,
    /// another credential or another uid a client of its own.
    @Test func upstreamClientsAreKeptPerCredentialAndCaller() async throws {
        let clients = UpstreamClients()
        let settings = ProviderSettings(name: "oauth2", kind: "oauth2")
        let (a, b) = (try CredentialID("ns/a"), try CredentialID("ns/b"))
        func use(_ id: CredentialID, _ uid: UInt32) throws -> UpstreamClients.Use {
            try clients.use(for: settings, version: 1, owner: .init(credential: id, uid: uid))
        }
        let first = try use(a, 1000)
        #expect(try use(a, 1000).client === first.client)
        #expect(try use(b, 1000).client !== first.client)
        #expect(try use(a, 1001).client !== first.client)
        #expect(clients.count == 3)
        await clients.shutdown()
        #expect(throws: ProviderConfigurationError.self) { try use(a, 1000) }
    }

    /// A client is shut down once idle for its retention, never while a call holds it (an
    /// answer still streaming, a call waiting for a refresh before its second try).
    @Test func aClientACallHoldsOutlivesItsRetention() async throws {
        let clients = UpstreamClients(idleRetention: .milliseconds(20))
        let settings = ProviderSettings(name: "oauth2", kind: "oauth2")
        func use(_ name: String) throws -> UpstreamClients.Use {
            try clients.use(for: settings, version: 1, owner: .init(credential: try CredentialID("ns/\(name)"), uid: 1))
        }
        let held = try use("a")
        try await Task.sleep(for: .milliseconds(60))
        let other = try use("b")
        #expect(clients.count == 2, "a client in use was swept")
        #expect(try use("a").client === held.client)
        held.end()
        other.end()
        try await Task.sleep(for: .milliseconds(60))
        _ = try use("c")
        #expect(clients.count == 1, "idle clients were kept past their retention")
        await clients.shutdown()
    }

    /// Past `maximumClients`, the least recently used idle client goes; held ones stay.
    @Test func clientsOverCapacityGoLeastRecentlyUsedFirst() async throws {
        let clients = UpstreamClients(maximumClients: 2)
        let settings = ProviderSettings(name: "oauth2", kind: "oauth2")
        func use(_ name: String) throws -> UpstreamClients.Use {
            try clients.use(for: settings, version: 1, owner: .init(credential: try CredentialID("ns/\(name)"), uid: 1))
        }
        let a = try use("a")
        a.end()
        let b = try use("b")
        b.end()
        let c = try use("c")
        #expect(clients.count == 2)
        #expect(try use("b").client === b.client, "the more recently used client went")
        #expect(try use("a").client !== a.client, "the least recently used client was kept")
        // Every client held: none can go, so the cap gives way rather than refuse a call.
        let held = try (0..<3).map { try use("h\($0)") }
        #expect(clients.count >= 3 && held.count == 3)
        withExtendedLifetime(c) {}
        await clients.shutdown()
    }

    /// A reload that changes the instance's transport gives new calls a new client; the old one
    /// finishes the calls that hold it. A call that took the older table gets the newer client.
    @Test func aReloadedTransportGetsANewClientAndTheOldOneFinishes() async throws {
        let clients = UpstreamClients()
        var settings = ProviderSettings(name: "oauth2", kind: "oauth2")
        settings.options = ["token_url": .string("https://id.example/token"), "keep_alive_seconds": .integer(4)]
        let owner = UpstreamClients.Owner(credential: try CredentialID("ns/a"), uid: 1)
        let before = try clients.use(for: settings, version: 1, owner: owner)
        settings.options["keep_alive_seconds"] = .integer(9)
        let after = try clients.use(for: settings, version: 2, owner: owner)
        #expect(after.client !== before.client)
        #expect(clients.count == 2, "the replaced client went while a call held it")
        var older = settings
        older.options["keep_alive_seconds"] = .integer(4)
        #expect(try clients.use(for: older, version: 1, owner: owner).client === after.client)
        before.end()
        #expect(clients.count == 1, "the replaced client outlived its last call")
        // A new table that leaves the transport as it was keeps the client.
        #expect(try clients.use(for: settings, version: 3, owner: owner).client === after.client)
        await clients.shutdown()
    }

    /// Paths that one server reads one way and another server another, each refused with its
    /// problem code before anything is sent.
    @Test func pathsServersReadDifferentlyAreRefused() async throws {
        let upstream = try await TestUpstream()
        let server = try await TestServer()
        try await withStopping(
            server,
            stop: { server in
                await server.stop()
                await upstream.stop()
            }
        ) { server in
            var settings = ProviderSettings(name: "oauth2", kind: "oauth2")
            settings.apiBases = [try APIBase(parsing: upstream.base + "/")]
            server.fixture.vault.install(ProviderTable(settings: ["oauth2": settings]))
            _ = try await server.fixture.vault.put(
                try CredentialID("ns/a"), payload: try SamplePayloads.decode(SamplePayloads.oauth().json),
                provider: "oauth2")
            let prefix = "/v1/credentials/ns/a/proxy"
            let refused: [(path: String, code: String)] = [
                // An empty segment: `//evil.example/x` is a host to a framework resolving it.
                ("//evil.example/x", "upstream_not_allowed"),
                ("/echo//x", "upstream_not_allowed"),
                ("/;/evil.example/x", "upstream_not_allowed"),
                // Escaped delimiters: `;`, `?` and `#` moved into the path by one decoder.
                ("/echo%3Bjsessionid=1", "upstream_not_allowed"),
                ("/echo%3fadmin=1", "upstream_not_allowed"),
                ("/echo%23x", "upstream_not_allowed"),
                // Overlong UTF-8 for `.` and `/`.
                ("/echo/%C0%AE%C0%AE/admin", "upstream_not_allowed"),
                ("/echo%C0%AFadmin", "upstream_not_allowed"),
                // Segments of dots.
                ("/echo/.../admin", "upstream_not_allowed"),
                ("/echo/..;x/admin", "upstream_not_allowed"),
            ]
            for (path, code) in refused {
                let response = try await server.request("GET", prefix + path)
                #expect(response.json()["code"] as? String == code, "\(path): \(response.status) \(response.text)")
            }
            #expect(upstream.received.isEmpty, "\(upstream.received)")
            let allowed = try await server.request("GET", prefix + "/echo/%D0%B8%D0%BC%D1%8F")
            #expect(allowed.status == 200 && upstream.received == ["GET /echo/%D0%B8%D0%BC%D1%8F"], "\(allowed.text)")
        }
    }
}

/// A loopback upstream that reads requests as a careless server does: it answers `/ignore…` as
/// soon as the head has arrived and never reads the body, so the body's bytes are read as the
/// start of the next request on the connection. Every other request's body is read by its
/// `Content-Length`. Each answer's body is the request's path without its `/`. Records every
/// head it read: the request line and the `Authorization`.
private final class BodyIgnoringUpstream: Sendable {
    struct Head: Sendable, CustomStringConvertible {
        let line: String
        let authorization: String?
        var description: String { "\(line) [\(authorization == nil ? "no auth" : "auth")]" }
    }

    let port: Int
    private let channel: any Channel
    private let log: HeadLog

    var heads: [Head] { log.heads.withLock { $0 } }

    private init(port: Int, channel: any Channel, log: HeadLog) {
        self.port = port
        self.channel = channel
        self.log = log
    }

    static func start() async throws -> BodyIgnoringUpstream {
        let log = HeadLog()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Reader(log: log))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return BodyIgnoringUpstream(port: channel.localAddress!.port!, channel: channel, log: log)
    }

    func stop() async throws { try await channel.close() }

    /// What the connections' readers read, in order.
    private final class HeadLog: Sendable {
        let heads = Mutex<[Head]>([])
        func record(_ head: Head) { heads.withLock { $0.append(head) } }
    }

    private final class Reader: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let log: HeadLog
        var received: [UInt8] = []
        init(log: HeadLog) { self.log = log }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received += Array(buffer: unwrapInboundIn(data))
            let separator: [UInt8] = Array("\r\n\r\n".utf8)
            while let end = received.indices.dropLast(3).first(where: {
                received[$0..<($0 + 4)].elementsEqual(separator)
            }) {
                let lines = String(decoding: received[..<end], as: UTF8.self).components(separatedBy: "\r\n")
                let fields = lines.dropFirst().map { $0.split(separator: ":", maxSplits: 1).map(String.init) }
                func field(_ name: String) -> String? {
                    fields.first { $0.count == 2 && $0[0].lowercased() == name }?[1].trimmingCharacters(
                        in: .whitespaces)
                }
                let bodyLength = field("content-length").flatMap(Int.init) ?? 0
                let path = lines[0].split(separator: " ").dropFirst().first.map(String.init) ?? "/"
                let ignoresBody = path.hasPrefix("/ignore")
                let consumed = end + 4 + (ignoresBody ? 0 : bodyLength)
                guard received.count >= consumed else { return }
                log.record(Head(line: lines[0], authorization: field("authorization")))
                received.removeFirst(consumed)
                let answer = String(path.dropFirst())
                context.writeAndFlush(
                    wrapOutboundOut(
                        ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: \(answer.utf8.count)\r\n\r\n\(answer)")),
                    promise: nil)
            }
        }
    }
}
