/// The routes (method and path template, `Route`'s by default), so an unmatched request can be
/// told apart: a known path with another method is 405 with `Allow`, anything else 404.
struct RouteTable: Sendable {
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

    private let routes: [(method: String, path: String, segments: [Segment])]

    init(_ descriptions: [(method: String, path: String)] = Route.registered) {
        routes = descriptions.map { ($0.method, $0.path, $0.path.split(separator: "/").map(Segment.init)) }
    }

    /// Whether no route's template, whatever its method, could match `path`: only then is the
    /// path the router's 404.
    func matchesNothing(_ path: String) -> Bool {
        let segments = path.split(separator: "/")
        return !routes.contains { Self.matches($0.segments, segments) }
    }

    /// Methods registered for a concrete `path`, sorted.
    func methods(for path: String) -> [String] {
        let segments = path.split(separator: "/")
        return Set(routes.filter { Self.matches($0.segments, segments) }.map(\.method)).sorted()
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
    var templates: [String] { routes.map { "/" + $0.path.split(separator: "/").joined(separator: "/") } }
}
