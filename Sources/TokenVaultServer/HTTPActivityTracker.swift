import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Counts the requests the router is answering on one connection and closes the connection
/// after `idleTimeout` without activity. It takes over the idle timeout from Hummingbird's
/// `HTTPConnectionStateHandler` (configured without one), because that handler never sees the
/// requests `TokenFastPath` answers before the decoder and would close a busy connection.
///
/// Activity is a request part read, a response finished, or `noteAnswered()` from the fast
/// path. As in Hummingbird, a connection waiting for the router's response (its request fully
/// read) is never idle, however long the response takes (streams); a request trickling in
/// (slowloris) is, and so is a request head that never completes.
final class HTTPActivityTracker: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// Requests that reached the router and whose response has not ended: while there are any,
    /// the fast path answers nothing on the connection, so responses keep the requests' order.
    private(set) var routedInProgress = 0
    private var isReadingRequest = false
    private var lastActive = ContinuousClock.now
    private let idleTimeout: Duration
    private var timer: Scheduled<Void>?

    init(idleTimeout: Duration) {
        self.idleTimeout = idleTimeout
    }

    /// The fast path answered a request at `instant`.
    func noteAnswered(at instant: ContinuousClock.Instant) {
        lastActive = instant
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { schedule(context, at: .now + idleTimeout) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        schedule(context, at: .now + idleTimeout)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastActive = .now
        switch unwrapInboundIn(data) {
        case .head:
            routedInProgress += 1
            isReadingRequest = true
        case .body:
            break
        case .end:
            isReadingRequest = false
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            routedInProgress = max(0, routedInProgress - 1)
            lastActive = .now
            if routedInProgress == 0 { schedule(context, at: lastActive + idleTimeout) }
        }
        context.write(data, promise: promise)
    }

    private func schedule(_ context: ChannelHandlerContext, at deadline: ContinuousClock.Instant) {
        guard timer == nil else { return }
        let delay = TimeAmount(deadline - .now)
        timer = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: delay) {
            self.timer = nil
            self.timeoutFired(context)
        }
    }

    private func timeoutFired(_ context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        // Waiting for the router: its response's end schedules the next check.
        if routedInProgress > 0, !isReadingRequest { return }
        let deadline = lastActive + idleTimeout
        if ContinuousClock.now >= deadline {
            context.close(promise: nil)
        } else {
            schedule(context, at: deadline)
        }
    }
}

@available(*, unavailable)
extension HTTPActivityTracker: Sendable {}
