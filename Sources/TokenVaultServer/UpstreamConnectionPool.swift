import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import TokenVaultCore
import TokenVaultProviders

/// Kept-alive HTTP/1.1 connections to upstream origins for the proxied calls `ProxyFastCall`
/// makes on one event loop. The connections live on that same loop, so a call never leaves it:
/// no thread hop between the caller's socket and the upstream's. Not thread-safe: used on its
/// loop only (`UpstreamConnectionPools` hands each loop its own).
final class UpstreamConnectionPool {
    /// Connections are shared by calls to the same origin through the same instance settings
    /// (`UpstreamTransport`: its TLS identity and trust): a reload that changes them starts anew.
    struct Key: Hashable {
        /// Held, not only named: an identifier alone could be taken by a new transport at the
        /// same address after a reload freed the old one, and its connections reused.
        let transport: UpstreamTransport
        let origin: String

        static func == (lhs: Key, rhs: Key) -> Bool { lhs.transport === rhs.transport && lhs.origin == rhs.origin }

        func hash(into hasher: inout Hasher) {
            hasher.combine(ObjectIdentifier(transport))
            hasher.combine(origin)
        }
    }

    /// Idle connections kept per key; more are closed when their call ends.
    static let maximumIdlePerKey = 64
    /// Keys kept before the emptied ones are dropped.
    static let maximumKeys = 32

    /// How long a connection is kept unused, as AsyncHTTPClient's pool keeps the router's path's
    /// (its default): an upstream that never closes idle connections, or a transport a reload
    /// replaced, does not keep them open for good.
    static let defaultIdleTimeout = TimeAmount.seconds(60)

    let eventLoop: any EventLoop
    let idleTimeout: TimeAmount
    private var idle: [Key: [UpstreamLink]] = [:]
    /// The next close of connections idle too long; scheduled only while some are idle, so an
    /// idle daemon is not woken for it.
    private var sweep: Scheduled<Void>?

    init(eventLoop: any EventLoop, idleTimeout: TimeAmount = defaultIdleTimeout) {
        self.eventLoop = eventLoop
        self.idleTimeout = idleTimeout
    }

    /// An idle connection for `key`, if one is still open.
    func take(_ key: Key) -> UpstreamLink? {
        while let link = idle[key]?.popLast() {
            if link.channel.isActive { return link }
        }
        return nil
    }

    /// Keeps `link` for the next call once its answer has ended (and the upstream did not say
    /// `Connection: close`); closes it when the pool holds enough.
    func giveBack(_ link: UpstreamLink, _ key: Key) {
        link.handler.receiver = nil
        link.handler.resume()
        guard link.channel.isActive, idle[key, default: []].count < Self.maximumIdlePerKey else {
            return link.channel.close(promise: nil)
        }
        link.reused = true
        link.idleSince = .now()
        idle[key, default: []].removeAll { !$0.channel.isActive }
        idle[key, default: []].append(link)
        scheduleSweep()
        // Keys whose connections are all gone (a transport a reload replaced, an origin called
        // once) are dropped now and then, and the transports they hold with them; not at every
        // call, which would allocate a list per call.
        if idle.count > Self.maximumKeys { idle = idle.filter { !$0.value.isEmpty } }
    }

    /// A new connection to `target`'s origin: TCP (with the instance's connect timeout), TLS for
    /// `https` with the instance's context, then NIO's HTTP/1.1 client codec.
    func connect(to target: UpstreamURL, with transport: UpstreamTransport) -> EventLoopFuture<UpstreamLink> {
        let host = target.host.hasPrefix("[") ? String(target.host.dropFirst().dropLast()) : target.host
        let secure = target.scheme == "https"
        let connectTimeout = TimeAmount.nanoseconds(Int64(transport.timeouts.connectSeconds * 1e9))
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if secure {
                        // As AsyncHTTPClient does: SNI and name checks for a name; an address is
                        // checked against the certificate's IP entries.
                        let name = host.isIPAddress ? nil : host
                        try pipeline.addHandler(NIOSSLClientHandler(context: transport.tls, serverHostname: name))
                    }
                    try pipeline.addHTTPClientHandlers()
                    try pipeline.addHandler(UpstreamLinkHandler())
                }
            }
            .connect(host: host, port: target.port)
            .flatMapThrowing { channel in
                UpstreamLink(
                    channel: channel,
                    handler: try channel.pipeline.syncOperations.handler(type: UpstreamLinkHandler.self))
            }
    }

    /// Closes the connections idle since before `idleTimeout` ago, then waits for the next one
    /// to reach it. A key's connections are in the order they were given back (`take` takes
    /// the last), so the oldest are first.
    private func scheduleSweep() {
        guard sweep == nil, let oldest = idle.values.compactMap({ $0.first?.idleSince }).min() else { return }
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        sweep = eventLoop.scheduleTask(deadline: oldest + idleTimeout) {
            let pool = bound.value
            pool.sweep = nil
            let cutoff = NIODeadline.now() - pool.idleTimeout
            for (key, links) in pool.idle {
                let expired = links.prefix { $0.idleSince <= cutoff }
                if expired.isEmpty && !links.isEmpty { continue }
                for link in expired { link.channel.close(promise: nil) }
                pool.idle[key] = expired.count == links.count ? nil : Array(links.dropFirst(expired.count))
            }
            pool.scheduleSweep()
        }
    }

    /// Closes every idle connection (the server is stopping).
    func closeAll() {
        sweep?.cancel()
        sweep = nil
        for link in idle.values.joined() { link.channel.close(promise: nil) }
        idle = [:]
    }
}

/// One connection to an upstream origin, owned by one call at a time.
final class UpstreamLink {
    let channel: any Channel
    let handler: UpstreamLinkHandler
    /// It carried an answer before: an upstream may have closed it while it sat idle, so a call
    /// that finds it closed before any answer may try once more on a new one.
    var reused = false
    /// When it was last given back to the pool.
    var idleSince = NIODeadline.now()

    init(channel: any Channel, handler: UpstreamLinkHandler) {
        self.channel = channel
        self.handler = handler
    }
}

/// What an upstream connection reports to the call that owns it.
enum UpstreamEvent {
    case head(HTTPResponseHead)
    case body(ByteBuffer)
    case end
    /// A batch of reads is over: time to flush what was written to the caller.
    case readComplete
    /// The connection closed, or failed, before the answer's end.
    case closed
}

/// The last handler of an upstream connection: hands the decoded answer to the call that owns
/// the connection, and holds back reads while that call's caller is slow to take the answer
/// (backpressure: the upstream waits instead of the daemon buffering). An idle connection that
/// receives anything is closed: an upstream has nothing to say unasked.
final class UpstreamLinkHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    var receiver: ((UpstreamEvent) -> Void)?
    private var context: ChannelHandlerContext?
    private var paused = false
    private var readWithheld = false

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Stops reading from the upstream until `resume`.
    func pause() { paused = true }

    /// Reads are held back for a slow caller (a read timeout does not run meanwhile).
    var isPaused: Bool { paused }

    func resume() {
        paused = false
        if readWithheld, let context {
            readWithheld = false
            context.read()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let receiver else { return context.close(promise: nil) }
        switch unwrapInboundIn(data) {
        case .head(let head): receiver(.head(head))
        case .body(let body): receiver(.body(body))
        case .end: receiver(.end)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        receiver?(.readComplete)
    }

    func channelInactive(context: ChannelHandlerContext) {
        let receiver = self.receiver
        self.receiver = nil
        receiver?(.closed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func read(context: ChannelHandlerContext) {
        if paused {
            readWithheld = true
        } else {
            context.read()
        }
    }
}

/// One `UpstreamConnectionPool` per event loop of the server.
final class UpstreamConnectionPools: Sendable {
    private let pools = Mutex<[ObjectIdentifier: NIOLoopBound<UpstreamConnectionPool>]>([:])

    /// The pool of `eventLoop`; call on that loop.
    func pool(on eventLoop: any EventLoop) -> UpstreamConnectionPool {
        let key = ObjectIdentifier(eventLoop)
        if let bound = pools.withLock({ $0[key] }) { return bound.value }
        let pool = UpstreamConnectionPool(eventLoop: eventLoop)
        pools.withLock { $0[key] = NIOLoopBound(pool, eventLoop: eventLoop) }
        return pool
    }

    /// Closes every pool's idle connections, each on its loop.
    func closeAll() {
        for bound in pools.withLock({ Array($0.values) }) {
            bound.eventLoop.execute { bound.value.closeAll() }
        }
    }
}

extension String {
    /// An IPv4 or IPv6 address rather than a name.
    fileprivate var isIPAddress: Bool {
        (try? SocketAddress(ipAddress: self, port: 0)) != nil
    }
}

@available(*, unavailable)
extension UpstreamConnectionPool: Sendable {}
@available(*, unavailable)
extension UpstreamLink: Sendable {}
@available(*, unavailable)
extension UpstreamLinkHandler: Sendable {}
