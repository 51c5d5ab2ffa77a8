import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix

/// Builds the HTTP application: the router with its problem+json middleware and the `/v1`
/// routes, HTTP/1.1 on a Unix domain socket with an idle timeout (slow or silent clients are
/// disconnected), and the event-loop fast path for plain token reads (`TokenFastPath`).
/// Connections are served by `eventLoopGroup`, which the caller owns and shuts down.
public enum VaultServer {
    public static func application(
        api: VaultAPI, socketPath: String, idleTimeoutSeconds: Int,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger,
        onRunning: @escaping @Sendable () async -> Void
    ) -> some ApplicationProtocol {
        let router = Router(context: VaultRequestContext.self)
        let routeTable = RouteTable()
        router.add(middleware: RequestMetricsMiddleware(metrics: api.metrics))
        router.add(middleware: ProblemMiddleware(routes: routeTable))
        api.register(on: router)
        routeTable.set(router.routes.map { ($0.method.rawValue, $0.path.description) })
        let serverName = "tokenvault"
        // No idle timeout here: HTTPActivityTracker keeps it, seeing the fast path's requests too.
        let http1 = HTTP1Channel.Configuration(idleTimeout: nil)
        return Application(
            router: router,
            server: HTTPServerBuilder { responder in
                FastPathHTTP1Channel(
                    http1: HTTP1Channel(responder: responder, configuration: http1),
                    idleTimeout: .seconds(idleTimeoutSeconds), api: api, serverName: serverName)
            },
            configuration: .init(address: .unixDomainSocket(path: socketPath), serverName: serverName),
            onServerRunning: { _ in await onRunning() },
            eventLoopGroupProvider: .shared(eventLoopGroup),
            logger: logger)
    }
}
