import NIOCore
import NIOHTTP1
import NIOPosix

/// One client connection kept open across requests, as a pooling client keeps it: for tests that
/// need keep-alive (several requests on one connection, a server outage killing an idle one).
public final class TestHTTPConnection: Sendable {
    private let channel: any Channel
    private let host: String
    private let port: Int

    private init(channel: any Channel, host: String, port: Int) {
        self.channel = channel
        self.host = host
        self.port = port
    }

    public static func connect(host: String = "127.0.0.1", port: Int, timeout: Double = 10) async throws
        -> TestHTTPConnection
    {
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.milliseconds(Int64(timeout * 1000)))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(HTTPResponseCollector())
                }
            }
        do {
            let channel = try await bootstrap.connect(host: host, port: port).get()
            return TestHTTPConnection(channel: channel, host: host, port: port)
        } catch {
            throw TestHTTPClientError.connectionFailed(String(describing: error))
        }
    }

    /// Sends one request and waits for its response. `Host` and `Content-Length` are added.
    public func send(
        _ method: String, _ target: String, headers: [String: String] = [:], body: [UInt8] = [],
        timeout: Double = 10
    ) async throws -> TestHTTPResponse {
        var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: target)
        head.headers.add(name: "Host", value: "\(host):\(port)")
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head.headers.add(name: name, value: value) }
        if !body.isEmpty || method == "POST" || method == "PUT" {
            head.headers.replaceOrAdd(name: "Content-Length", value: "\(body.count)")
        }
        let promise = channel.eventLoop.makePromise(of: TestHTTPResponse.self)
        let request = HTTPResponseCollector.PendingRequest(
            head: head, body: body, timeout: .milliseconds(Int64(timeout * 1000)), response: promise)
        channel.writeAndFlush(request).whenFailure { error in
            promise.fail(
                error as? ChannelError == .ioOnClosedChannel || error as? ChannelError == .alreadyClosed
                    ? TestHTTPClientError.closedWithoutResponse : error)
        }
        return try await promise.futureResult.get()
    }

    /// A form POST on this connection, with HTTP Basic credentials when given.
    public func postForm(
        _ target: String, _ form: [String: String], basicAuth: (user: String, password: String)? = nil,
        headers: [String: String] = [:], timeout: Double = 10
    ) async throws -> TestHTTPResponse {
        var headers = headers
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        if let basicAuth {
            headers["Authorization"] = TestHTTPClient.basicAuthorization(
                user: basicAuth.user, password: basicAuth.password)
        }
        return try await send(
            "POST", target, headers: headers, body: Array(FormURLEncoding.encode(form).utf8), timeout: timeout)
    }

    /// Whether the connection is still open (the server has not closed it).
    public var isOpen: Bool { channel.isActive }

    /// Waits up to `timeout` seconds for the server to close the connection; true if it did.
    public func waitForClose(timeout: Double) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        while channel.isActive, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        return !channel.isActive
    }

    public func close() async { try? await channel.close() }
}
