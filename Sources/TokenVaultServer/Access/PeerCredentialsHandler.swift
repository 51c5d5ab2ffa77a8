import NIOCore
import Synchronization

/// Reads the connection's `SO_PEERCRED` once, when the connection starts, and keeps it until it
/// closes: the one place peer credentials are read. The kernel's answer cannot change during a
/// connection, and both the event-loop fast path (`peer`, on the connection's own loop, no lock)
/// and the router (`PeerCredentials.of`, from any thread) take it from here, so they can never
/// disagree about who is calling.
///
/// It is also where a connection is admitted: past the caps of `ConnectionLimiter` (over all
/// callers, per uid) the caller gets a `503 too_many_connections` and the connection is closed
/// before any request of it is read.
final class PeerCredentialsHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let limiter: ConnectionLimiter
    /// The uid whose connection slot this connection holds, released when it closes.
    private var admitted: UInt32?

    init(limiter: ConnectionLimiter) { self.limiter = limiter }

    /// Peers of the open connections, by channel.
    private static let known = Mutex<[ObjectIdentifier: PeerCredentials]>([:])

    /// The peer of an open connection, if its credentials could be read.
    static func peer(of channel: any Channel) -> PeerCredentials? {
        known.withLock { $0[ObjectIdentifier(channel)] }
    }

    /// The peer, once read; only on the connection's event loop.
    private(set) var peer: PeerCredentials?

    func handlerAdded(context: ChannelHandlerContext) {
        // An accepted connection is usually active before its pipeline is complete.
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A refused connection's bytes are never read into a request.
        guard admitted != nil else { return }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        forget(context.channel)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        forget(context.channel)
    }

    private func start(_ context: ChannelHandlerContext) {
        guard peer == nil, let read = PeerCredentials.readNow(from: context.channel) else { return }
        peer = read
        guard limiter.admitConnection(uid: read.uid) else {
            // Not during the pipeline's set-up: the server's connection handling must start
            // before the connection ends, so it ends the ordinary way.
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.execute { loopBound.value.0.refuse(loopBound.value.1) }
            return
        }
        admitted = read.uid
        Self.known.withLock { $0[ObjectIdentifier(context.channel)] = read }
    }

    private func forget(_ channel: any Channel) {
        _ = Self.known.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
        if let uid = admitted {
            admitted = nil
            limiter.releaseConnection(uid: uid)
        }
    }

    /// 503 `too_many_connections`, then close: the caller learns why instead of seeing a reset.
    private func refuse(_ context: ChannelHandlerContext) {
        let problem = ProblemDetails(
            .tooManyConnections,
            detail: "too many open connections (limits.max_connections, limits.max_connections_per_uid); "
                + "close idle ones or reuse a connection", retryAfter: 1)
        var response = context.channel.allocator.buffer(capacity: 512)
        let body = problem.compactJSON()
        response.writeString(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\nRetry-After: 1\r\n"
                + "Connection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        context.writeAndFlush(wrapOutboundOut(response)).whenComplete { [channel = context.channel] _ in
            channel.close(promise: nil)
        }
    }
}

@available(*, unavailable)
extension PeerCredentialsHandler: Sendable {}
