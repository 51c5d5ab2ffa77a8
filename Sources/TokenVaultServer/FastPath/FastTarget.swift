import TokenVaultCore

/// A GET target the event loop may answer itself, parsed from the bytes received: a token read,
/// a credential's metadata, a page of the listing, the health check, or a path no route has.
/// Anything unusual (a query where none is read, percent-encoding, an empty or dot segment, an
/// invalid id) is not recognised, and the router answers it with its own precise answer.
enum FastTarget: Equatable {
    case token(TokenReadTarget)
    /// `/v1/credentials/{namespace}/{name}`.
    case show(CredentialID)
    /// `/v1/credentials` with plain parameters (answered when `RenderedPages` holds the page).
    case list(ListingParameters)
    /// `/v1/health`.
    case health
    /// A path of plain segments that no route's template matches (the router's 404).
    case unmatched(path: String)

    /// The route template the router records each under.
    var route: String {
        switch self {
        case .token: Route.token.template
        case .show: Route.show.template
        case .list: Route.list.template
        case .health: Route.health.template
        // Hummingbird's not-found responder's endpoint path.
        case .unmatched: "NotFound"
        }
    }

    private static let healthPath = Array(Route.health.template.utf8)
    private static let credentials = Array((Route.list.template + "/").utf8)
    private static let proxy = Array("proxy".utf8)

    init?(bytes target: UnsafeRawBufferPointer, routes: RouteTable) {
        if let token = TokenReadTarget(bytes: target) {
            self = .token(token)
            return
        }
        // A proxied call is the router's, and its route always exists: matching it against every
        // route's template cost more than a token read.
        guard !Self.isProxyCall(target) else { return nil }
        if let listing = ListingParameters(target: target) {
            self = .list(listing)
            return
        }
        guard target.first == UInt8(ascii: "/"),
            !target.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "%") })
        else { return nil }
        if target.elementsEqual(Self.healthPath) {
            self = .health
            return
        }
        let segments = target.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard
            segments.allSatisfy({ segment in
                !segment.isEmpty && !segment.elementsEqual([UInt8(ascii: ".")])
                    && !segment.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")])
            })
        else { return nil }
        if target.starts(with: Self.credentials), segments.count == 4,
            let id = try? CredentialID(
                namespace: String(decoding: segments[2], as: UTF8.self),
                name: String(decoding: segments[3], as: UTF8.self))
        {
            self = .show(id)
            return
        }
        let path = String(decoding: target, as: UTF8.self)
        guard routes.matchesNothing(path) else { return nil }
        self = .unmatched(path: path)
    }

    /// `/v1/credentials/{namespace}/{name}/proxy`, then nothing, `/…` or `?…` (the router's).
    static func isProxyCall(_ target: UnsafeRawBufferPointer) -> Bool {
        guard target.starts(with: credentials) else { return false }
        guard let namespaceEnd = target[credentials.count...].firstIndex(of: UInt8(ascii: "/")),
            let nameEnd = target[(namespaceEnd + 1)...].firstIndex(of: UInt8(ascii: "/"))
        else { return false }
        let rest = target[(nameEnd + 1)...]
        guard rest.starts(with: proxy) else { return false }
        let after = rest.dropFirst(proxy.count)
        return after.isEmpty || after.first == UInt8(ascii: "/") || after.first == UInt8(ascii: "?")
    }
}
