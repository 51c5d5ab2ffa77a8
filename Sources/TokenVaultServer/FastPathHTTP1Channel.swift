import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

/// Hummingbird's HTTP/1.1 child channel with `TokenFastPath` inserted right after its
/// connection-state handler (idle timeout, graceful close), in front of the router.
/// Everything else, the pipeline and the request loop, is Hummingbird's own `HTTP1Channel`.
struct FastPathHTTP1Channel: HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let http1: HTTP1Channel
    let api: VaultAPI
    let serverName: String

    var responder: Responder { http1.responder }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        http1.setup(channel: channel, logger: logger).flatMapThrowing { [api, serverName] value in
            let pipeline = channel.pipeline.syncOperations
            let connectionState = try pipeline.handler(type: HTTPConnectionStateHandler.self)
            try pipeline.addHandler(TokenFastPath(api: api, serverName: serverName), position: .after(connectionState))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await http1.handle(value: value, logger: logger)
    }
}
