import Hummingbird
import Logging

/// Builds the HTTP application: the router with its problem+json middleware and the `/v1`
/// routes, HTTP/1.1 on a Unix domain socket with an idle timeout (slow or silent clients are
/// disconnected).
public enum VaultServer {
    public static func application(
        api: VaultAPI, socketPath: String, idleTimeoutSeconds: Int, logger: Logger,
        onRunning: @escaping @Sendable () async -> Void
    ) -> some ApplicationProtocol {
        let router = Router(context: VaultRequestContext.self)
        let routeTable = RouteTable()
        router.add(middleware: RequestMetricsMiddleware(metrics: api.metrics))
        router.add(middleware: ProblemMiddleware(routes: routeTable))
        api.register(on: router)
        routeTable.set(router.routes.map { ($0.method.rawValue, $0.path.description) })
        return Application(
            router: router,
            server: .http1(configuration: .init(idleTimeout: .seconds(Int64(idleTimeoutSeconds)))),
            configuration: .init(address: .unixDomainSocket(path: socketPath), serverName: "tokenvault"),
            onServerRunning: { _ in await onRunning() },
            logger: logger)
    }
}
