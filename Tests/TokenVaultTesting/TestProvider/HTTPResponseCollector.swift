import NIOCore
import NIOHTTP1

/// The client side of `TestHTTPConnection`: writes each request, matches responses to requests
/// in order, and turns a hang-up, a timeout or garbage into the error that says which it was.
final class HTTPResponseCollector: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = PendingRequest
    typealias OutboundOut = HTTPClientRequestPart

    struct PendingRequest: Sendable {
        var head: HTTPRequestHead
        var body: [UInt8]
        var timeout: TimeAmount
        var response: EventLoopPromise<TestHTTPResponse>
    }

    private var waiting: [(response: EventLoopPromise<TestHTTPResponse>, timer: Scheduled<Void>)] = []
    private var head: HTTPResponseHead?
    private var body: [UInt8] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        let timer = context.eventLoop.assumeIsolated().scheduleTask(in: request.timeout) {
            request.response.fail(TestHTTPClientError.timedOut)
            context.close(promise: nil)
        }
        waiting.append((request.response, timer))
        context.write(wrapOutboundOut(.head(request.head)), promise: nil)
        if !request.body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: request.body)))), promise: nil)
        }
        context.write(wrapOutboundOut(.end(nil)), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(var buffer):
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard let head, !waiting.isEmpty else { return }
            self.head = nil
            let (response, timer) = waiting.removeFirst()
            timer.cancel()
            var headers: [String: String] = [:]
            for (name, value) in head.headers {
                let key = name.lowercased()
                headers[key] = headers[key].map { "\($0), \(value)" } ?? value
            }
            response.succeed(TestHTTPResponse(status: Int(head.status.code), headers: headers, body: body))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(TestHTTPClientError.closedWithoutResponse)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failAll(TestHTTPClientError.malformedResponse(String(describing: error)))
        context.close(promise: nil)
    }

    private func failAll(_ error: TestHTTPClientError) {
        let pending = waiting
        waiting = []
        for (response, timer) in pending {
            timer.cancel()
            response.fail(error)
        }
    }
}
