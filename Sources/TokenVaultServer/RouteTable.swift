import Synchronization

/// The registered routes (method and path template), so an unmatched request can be told
/// apart: a known path with another method is 405 with `Allow`, anything else 404.
final class RouteTable: Sendable {
    private let routes = Mutex<[(method: String, segments: [Substring])]>([])

    /// Records the router's routes once they are all registered.
    func set(_ descriptions: [(method: String, path: String)]) {
        routes.withLock { $0 = descriptions.map { ($0.method, $0.path.split(separator: "/")) } }
    }

    /// Whether no route's template, whatever its method, could match `path` (a `**` segment
    /// matches the rest, one segment or more): only then is the path the router's 404. Empty
    /// until the routes are set, so nothing is called unmatched before then.
    func matchesNothing(_ path: String) -> Bool {
        let segments = path.split(separator: "/")
        return routes.withLock { routes in
            !routes.isEmpty
                && !routes.contains { route in
                    Self.matches(route.segments, segments)
                }
        }
    }

    /// Any segment with a parameter or a wildcard in it (`{x}`, `:x`, `*`, `prefix{x}`, `*.ext`)
    /// counts as matching any one segment: wider than the router, never narrower.
    private static func matches(_ template: [Substring], _ segments: [Substring]) -> Bool {
        for (index, part) in template.enumerated() {
            if part == "**" { return segments.count > index }
            guard index < segments.count else { return false }
            guard part == segments[index] || part.hasPrefix(":") || part.contains("{") || part.contains("*") else {
                return false
            }
        }
        return template.count == segments.count
    }

    /// Every registered path template (for tests).
    var templates: [String] {
        routes.withLock { $0.map { "/" + $0.segments.joined(separator: "/") } }
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
