import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

/// Hummingbird's HTTP/1.1 child channel with `TokenFastPath` in front of the HTTP decoder and
/// `HTTPActivityTracker` after Hummingbird's connection-state handler. The tracker keeps the idle
/// timeout, so `http1` must be configured without one; Hummingbird's handler still does graceful
/// shutdown. Everything else, the pipeline and the
/// request loop, is `HTTP1Channel`'s own.
struct FastPathHTTP1Channel: HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let http1: HTTP1Channel
    let idleTimeout: Duration
    let api: VaultAPI
    let serverName: String

    var responder: Responder { http1.responder }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        http1.setup(channel: channel, logger: logger).flatMapThrowing { [api, serverName, idleTimeout] value in
            let pipeline = channel.pipeline.syncOperations
            let connectionState = try pipeline.handler(type: HTTPConnectionStateHandler.self)
            let limits = api.options.connections
            let tracker = HTTPActivityTracker(
                timeouts: .init(
                    idle: idleTimeout, requestHead: .seconds(limits.requestHeadSeconds),
                    minimumBodyRate: limits.minimumBodyBytesPerSecond))
            try pipeline.addHandler(tracker, position: .after(connectionState))
            let peers = PeerCredentialsHandler(limiter: api.limiter)
            try pipeline.addHandler(
                TokenFastPath(api: api, serverName: serverName, tracker: tracker, peers: peers), position: .first)
            try pipeline.addHandler(peers, position: .first)
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await http1.handle(value: value, logger: logger)
    }
}
