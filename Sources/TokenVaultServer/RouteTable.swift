import Synchronization

/// The registered routes (method and path template), so an unmatched request can be told
/// apart: a known path with another method is 405 with `Allow`, anything else 404.
final class RouteTable: Sendable {
    private let routes = Mutex<[(method: String, segments: [Substring])]>([])

    /// Records the router's routes once they are all registered.
    func set(_ descriptions: [(method: String, path: String)]) {
        routes.withLock { $0 = descriptions.map { ($0.method, $0.path.split(separator: "/")) } }
    }

    /// Methods registered for a concrete `path` (parameters match any one segment).
    func methods(for path: String) -> [String] {
        let segments = path.split(separator: "/")
        return routes.withLock { routes in
            Set(
                routes.filter { route in
                    route.segments.count == segments.count
                        && zip(route.segments, segments).allSatisfy { template, actual in
                            template == actual || template.hasPrefix("{") || template.hasPrefix(":")
                        }
                }.map(\.method)
            ).sorted()
        }
    }
}
