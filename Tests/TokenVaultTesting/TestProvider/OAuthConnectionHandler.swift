import Foundation
import NIOCore
import NIOHTTP1

/// One server connection: collects a request, asks the provider what to do, and does it —
/// answer (always with `Content-Length`, keeping the connection alive unless the client asked
/// otherwise), wait and then answer, or hang up without a word. Requests on a keep-alive
/// connection are handled one at a time (NIO's pipelining handler holds the next one back).
final class OAuthConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let core: ProviderCore
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var isActive = true

    init(core: ProviderCore) { self.core = core }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(var buffer):
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard let head else { return }
            self.head = nil
            handle(head, context: context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        isActive = false
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { isActive = false }

    private func handle(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let request = RecordedRequest(
            method: head.method.rawValue, uri: head.uri, headers: head.headers.map { ($0.name, $0.value) },
            body: body, receivedAt: Date())
        body = []
        switch core.receive(request) {
        case .reply(let reply):
            write(reply, for: head, context: context)
        case .drop:
            context.close(promise: nil)
        case .delay(let seconds):
            context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(Int64(max(0, seconds) * 1e9))) {
                let reply = self.core.serveAfterDelay(request)
                if self.isActive { self.write(reply, for: head, context: context) }
            }
        case .replyLater(let reply, let seconds):
            context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(Int64(max(0, seconds) * 1e9))) {
                if self.isActive { self.write(reply, for: head, context: context) }
            }
        }
    }

    private func write(_ reply: HTTPReply, for request: HTTPRequestHead, context: ChannelHandlerContext) {
        var headers = HTTPHeaders(reply.headers)
        if !headers.contains(name: "content-length") {
            headers.add(name: "Content-Length", value: "\(reply.body.count)")
        }
        let keepAlive = request.isKeepAlive
        if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        let head = HTTPResponseHead(
            version: request.version, status: HTTPResponseStatus(statusCode: reply.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !reply.body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: reply.body)))), promise: nil)
        }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            written.whenComplete { [channel = context.channel] _ in channel.close(promise: nil) }
        }
    }
}
