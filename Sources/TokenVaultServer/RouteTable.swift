import Synchronization

/// The registered routes (method and path template), so an unmatched request can be told
/// apart: a known path with another method is 405 with `Allow`, anything else 404.
final class RouteTable: Sendable {
    /// A template's segment, classified once when the routes are set: the event loop asks about
    /// every unknown path, and classifying text per request (`contains("{")` goes through
    /// Foundation's string search) cost more than the rest of the 404.
    enum Segment: Equatable, Sendable {
        case literal(Substring)
        /// A parameter or a wildcard in it (`{x}`, `:x`, `*`, `prefix{x}`, `*.ext`): counts as
        /// matching any one segment, wider than the router, never narrower.
        case any
        /// `**`: the rest of the path, one segment or more.
        case rest

        init(_ part: Substring) {
            if part == "**" {
                self = .rest
            } else if part.hasPrefix(":") || part.contains(where: { $0 == "{" || $0 == "*" }) {
                self = .any
            } else {
                self = .literal(part)
            }
        }
    }

    private let routes = Mutex<[(method: String, path: String, segments: [Segment])]>([])

    /// Records the router's routes once they are all registered.
    func set(_ descriptions: [(method: String, path: String)]) {
        let compiled = descriptions.map { ($0.method, $0.path, $0.path.split(separator: "/").map(Segment.init)) }
        routes.withLock { $0 = compiled }
    }

    /// Whether no route's template, whatever its method, could match `path`: only then is the
    /// path the router's 404. Empty until the routes are set, so nothing is called unmatched
    /// before then.
    func matchesNothing(_ path: String) -> Bool {
        let segments = path.split(separator: "/")
        return routes.withLock { routes in
            !routes.isEmpty && !routes.contains { Self.matches($0.segments, segments) }
        }
    }

    /// Methods registered for a concrete `path`, sorted.
    func methods(for path: String) -> [String] {
        let segments = path.split(separator: "/")
        return routes.withLock { routes in
            Set(routes.filter { Self.matches($0.segments, segments) }.map(\.method)).sorted()
        }
    }

    private static func matches(_ template: [Segment], _ segments: [Substring]) -> Bool {
        for (index, part) in template.enumerated() {
            if part == .rest { return segments.count > index }
            guard index < segments.count else { return false }
            if case .literal(let literal) = part, !literal.utf8.elementsEqual(segments[index].utf8) { return false }
        }
        return template.count == segments.count
    }

    /// Every registered path template (for tests).
    var templates: [String] {
        routes.withLock { $0.map { "/" + $0.path.split(separator: "/").joined(separator: "/") } }
    }
}
