import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOExtras
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// Builds the HTTP server: the router with its problem+json middleware and the `/v1` routes,
/// HTTP/1.1 on a Unix domain socket with an idle timeout (slow or silent clients are
/// disconnected), and the event-loop fast path for plain token reads (`TokenFastPath`).
/// Connections are served by `eventLoopGroup`, which the caller owns and shuts down.
///
/// The socket is bound to a path, or it is the one systemd passed (`Listener.inherited`):
/// Hummingbird's own server only binds, so the accept loop is `VaultServer.Service`'s.
public enum VaultServer {
    /// Where connections come from.
    public enum Listener: Sendable, Equatable {
        /// Bind a new socket at this path (an existing stale one is replaced).
        case path(String)
        /// A listening socket handed over already bound (socket activation).
        case inherited(descriptor: CInt)
    }

    public static func application(
        api: VaultAPI, listener: Listener, idleTimeoutSeconds: Int,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger,
        onRunning: @escaping @Sendable () async -> Void
    ) -> some ServiceLifecycle.Service {
        let router = Router(context: VaultRequestContext.self)
        router.add(middleware: TraceContextMiddleware())
        router.add(middleware: RequestMetricsMiddleware(metrics: api.metrics))
        router.add(middleware: ProblemMiddleware(routes: api.routes))
        api.register(on: router)
        return Service(
            responder: router.buildResponder(), api: api, listener: listener,
            idleTimeout: .seconds(idleTimeoutSeconds), eventLoopGroup: eventLoopGroup, logger: logger,
            onRunning: onRunning)
    }

    static let serverName = "tokenvault"

    /// Accepts connections on the listener until graceful shutdown, then stops accepting, lets
    /// each connection finish its request (Hummingbird's connection handler closes it once
    /// idle) and returns when the last one is closed.
    struct Service: ServiceLifecycle.Service {
        let responder: RouterResponder<VaultRequestContext>
        let api: VaultAPI
        let listener: Listener
        let idleTimeout: Duration
        let eventLoopGroup: any EventLoopGroup
        let logger: Logger
        let onRunning: @Sendable () async -> Void

        func run() async throws {
            let connection = FastPathHTTP1Channel(
                // No idle timeout here: HTTPActivityTracker keeps it, seeing the fast path's requests too.
                http1: HTTP1Channel(responder: respond, configuration: .init(idleTimeout: nil)),
                idleTimeout: idleTimeout, api: api, serverName: VaultServer.serverName)
            let quiescing = ServerQuiescingHelper(group: eventLoopGroup)
            let bootstrap = ServerBootstrap(group: eventLoopGroup)
                .serverChannelOption(ChannelOptions.backlog, value: 256)
                .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
                .serverChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            quiescing.makeServerChannelHandler(channel: channel))
                    }
                }
            let logger = logger
            let server: NIOAsyncChannel<FastPathHTTP1Channel.Value, Never>
            switch listener {
            case .path(let path):
                server = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) {
                    connection.setup(channel: $0, logger: logger)
                }
            case .inherited(let descriptor):
                server = try await bootstrap.bind(descriptor) { connection.setup(channel: $0, logger: logger) }
            }
            await withGracefulShutdownHandler {
                await onRunning()
                await withDiscardingTaskGroup { group in
                    do {
                        try await server.executeThenClose { inbound in
                            for try await child in inbound {
                                group.addTask { await connection.handle(value: child, logger: logger) }
                            }
                        }
                    } catch {
                        logger.error("accepting connections failed", metadata: ["tokenvault.error": "\(error)"])
                    }
                }
            } onGracefulShutdown: {
                quiescing.initiateShutdown(promise: nil)
            }
        }

        /// One request through the router, as Hummingbird's `Application` does it: unexpected
        /// errors become a bare 500, and every response carries `Date` and `Server`.
        @Sendable func respond(_ request: Request, _ writer: consuming ResponseWriter, _ channel: any Channel)
            async throws
        {
            let context = VaultRequestContext(source: .init(channel: channel, logger: logger))
            var response: Response
            do {
                response = try await responder.respond(to: request, context: context)
            } catch let error as HTTPParserError {
                throw error
            } catch {
                response = Response(status: .internalServerError)
            }
            response.headers[.date] = HTTPDateHeader.now
            response.headers[.server] = VaultServer.serverName
            do {
                try await writer.write(response: response.head, body: response.body)
            } catch is HTTPParserError {
                // Rethrown as it is, it would make the channel try to answer once more.
                throw WriteFailed()
            }
        }
    }

    struct WriteFailed: Error {}
}
