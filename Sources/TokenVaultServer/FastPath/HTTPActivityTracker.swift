import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Counts the requests the router is answering on one connection and closes the connection when
/// it is idle too long or a request arrives too slowly. It takes over the idle timeout from
/// Hummingbird's `HTTPConnectionStateHandler` (configured without one), because that handler
/// never sees the requests `TokenFastPath` answers before the decoder and would close a busy
/// connection.
///
/// - Idle: no request part read, no response finished, no `noteAnswered()` from the fast path
///   for `idleTimeout`. As in Hummingbird, a connection waiting for the router's response (its
///   request fully read) is never idle, however long the response takes (streams).
/// - Slow requests: a request's head must arrive in full within `requestHeadTimeout` of its first
///   byte (the fast path reports bytes with `noteBytesArrived()`), and its body at
///   `minimumBodyRate` bytes per second or faster after a grace of `bodyGrace`. A request sent a
///   byte at a time is closed, however often each byte resets the idle clock.
/// - A response with `Connection: close` (a 403 to a caller with no permission at all) closes the
///   connection once written.
final class HTTPActivityTracker: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    struct Timeouts {
        var idle: Duration
        var requestHead: Duration
        var minimumBodyRate: Int
        var bodyGrace: Duration = .seconds(5)
    }

    /// Requests whose answer from the router has not ended. While there are any, the fast path
    /// answers nothing on the connection, so answers keep the requests' order, and the connection
    /// is never idle.
    private(set) var answersOwed = 0
    private var isReadingRequest = false
    private var lastActive = ContinuousClock.now
    /// The first byte of a request whose head is not complete yet.
    private var headStartedAt: ContinuousClock.Instant?
    /// The end of the head of a request whose body is still arriving, and its bytes so far.
    private var bodyStartedAt: ContinuousClock.Instant?
    private var bodyReceived = 0
    private var closeAfterResponse = false
    private let timeouts: Timeouts
    private var timer: (task: Scheduled<Void>, at: ContinuousClock.Instant)?
    private var context: ChannelHandlerContext?

    init(timeouts: Timeouts) {
        self.timeouts = timeouts
    }

    /// The fast path answered a request at `instant`.
    func noteAnswered(at instant: ContinuousClock.Instant) {
        lastActive = instant
        headStartedAt = nil
    }

    /// Bytes arrived on the connection (reported by the fast path, which sees them first): if no
    /// request is under way, one has started, and its head's deadline runs.
    func noteBytesArrived() {
        guard headStartedAt == nil, !isReadingRequest else { return }
        let now = ContinuousClock.now
        headStartedAt = now
        if let context { schedule(context, at: now + min(timeouts.requestHead, .seconds(1))) }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { schedule(context, at: .now + timeouts.idle) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.task.cancel()
        timer = nil
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        schedule(context, at: .now + timeouts.idle)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let now = ContinuousClock.now
        lastActive = now
        switch unwrapInboundIn(data) {
        case .head:
            answersOwed += 1
            isReadingRequest = true
            headStartedAt = nil
            bodyStartedAt = now
            bodyReceived = 0
            schedule(context, at: now + .seconds(1))
        case .body(let buffer):
            bodyReceived += buffer.readableBytes
        case .end:
            isReadingRequest = false
            bodyStartedAt = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let response):
            if response.headerFields[.connection]?.lowercased() == "close" { closeAfterResponse = true }
        case .body:
            break
        case .end:
            answersOwed = max(0, answersOwed - 1)
            lastActive = .now
            if closeAfterResponse {
                let written = promise ?? context.eventLoop.makePromise()
                written.futureResult.whenComplete { [channel = context.channel] _ in channel.close(promise: nil) }
                context.write(data, promise: written)
                return
            }
            if answersOwed == 0 { schedule(context, at: lastActive + timeouts.idle) }
        }
        context.write(data, promise: promise)
    }

    /// Runs `timeoutFired` at `deadline`, or sooner if a check is already due earlier.
    private func schedule(_ context: ChannelHandlerContext, at deadline: ContinuousClock.Instant) {
        if let timer {
            guard deadline < timer.at else { return }
            timer.task.cancel()
        }
        let delay = TimeAmount(deadline - .now)
        let task = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: delay) {
            self.timer = nil
            self.timeoutFired(context)
        }
        timer = (task, deadline)
    }

    private func timeoutFired(_ context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        let now = ContinuousClock.now
        if let started = headStartedAt {
            guard now - started < timeouts.requestHead else { return context.close(promise: nil) }
            schedule(context, at: min(started + timeouts.requestHead, now + .seconds(1)))
        }
        if let started = bodyStartedAt, isReadingRequest {
            let elapsed = now - started
            if elapsed > timeouts.bodyGrace {
                let seconds = Double((elapsed - timeouts.bodyGrace).components.seconds)
                guard Double(bodyReceived) >= Double(timeouts.minimumBodyRate) * seconds else {
                    return context.close(promise: nil)
                }
            }
            schedule(context, at: now + .seconds(1))
        }
        // Waiting for the router: its response's end schedules the next check.
        if answersOwed > 0, !isReadingRequest { return }
        let deadline = lastActive + timeouts.idle
        if now >= deadline {
            context.close(promise: nil)
        } else {
            schedule(context, at: deadline)
        }
    }
}

@available(*, unavailable)
extension HTTPActivityTracker: Sendable {}
