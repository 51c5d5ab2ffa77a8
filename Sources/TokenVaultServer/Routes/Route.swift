import HTTPTypes

/// Every route of the API, defined once: its methods and path template. The router registers
/// each from here (`VaultAPI.register`), the metrics label requests by `template` (Hummingbird's
/// endpoint path is the template registered), and the event loop matches the routes it answers
/// itself (`FastTarget`) and tells a path no route has (`RouteTable`) from this same list, so a
/// route added here is served by both.
enum Route: CaseIterable, Sendable {
    case health
    case metrics
    case list
    case put
    case show
    case token
    case delete
    case refresh
    case watch
    case exchange
    /// A token derived from the credential's (RFC 8693).
    case tokenExchange
    /// Starts a sign-in the vault finishes itself.
    case authorize
    /// The caller's device grants waiting for the credential, and how their last sign-in ended.
    case authorizationStatus
    /// Finishes it with what the authorization server's redirect brought.
    case authorizeCallback
    case proxy
    /// The proxy with a path after `/proxy`.
    case proxyPath
    case events
    case usable
    case rotateKey
    case audit
    case backup
    case status
    /// A provider instance as the daemon uses it: endpoints, authentication, client keys.
    case provider
    /// The public JWK Set of an instance's client key, to register at its server.
    case providerKeys

    /// The path, parameters in braces (`{namespace}`), `**` for the rest of the path.
    var template: String {
        switch self {
        case .health: "/v1/health"
        case .metrics: "/metrics"
        case .list: "/v1/credentials"
        case .put, .show, .delete: "/v1/credentials/{namespace}/{name}"
        case .token: "/v1/credentials/{namespace}/{name}/token"
        case .refresh: "/v1/credentials/{namespace}/{name}/refresh"
        case .watch: "/v1/credentials/{namespace}/{name}/watch"
        case .exchange: "/v1/credentials/{namespace}/{name}/exchange"
        case .tokenExchange: "/v1/credentials/{namespace}/{name}/token-exchange"
        case .authorize, .authorizationStatus: "/v1/credentials/{namespace}/{name}/authorization"
        case .authorizeCallback: "/v1/credentials/{namespace}/{name}/authorization/callback"
        case .proxy: "/v1/credentials/{namespace}/{name}/proxy"
        case .proxyPath: "/v1/credentials/{namespace}/{name}/proxy/**"
        case .events: "/v1/events"
        case .usable: "/v1/proxy/credentials"
        case .rotateKey: "/v1/admin/rotate-key"
        case .audit: "/v1/admin/audit"
        case .backup: "/v1/admin/backup"
        case .status: "/v1/admin/status"
        case .provider: "/v1/admin/providers/{provider}"
        case .providerKeys: "/v1/admin/providers/{provider}/jwks"
        }
    }

    var methods: [HTTPRequest.Method] {
        switch self {
        case .put: [.put]
        case .delete: [.delete]
        case .refresh, .exchange, .tokenExchange, .authorize, .authorizeCallback, .rotateKey, .backup: [.post]
        case .proxy, .proxyPath: Self.proxyMethods
        case .health, .metrics, .list, .show, .token, .watch, .events, .usable, .audit, .status, .authorizationStatus,
            .provider, .providerKeys:
            [.get]
        }
    }

    /// Every method and template, as the router registers them.
    static var registered: [(method: String, path: String)] {
        allCases.flatMap { route in route.methods.map { ($0.rawValue, route.template) } }
    }

    /// The methods APIs are called with. (`HEAD` and `OPTIONS` are left out: a `HEAD` answer's
    /// length describes a body that is not there, which a streaming proxy cannot check, and
    /// `OPTIONS` is a browser's preflight, not a server's call.)
    static let proxyMethods: [HTTPRequest.Method] = [.get, .post, .put, .patch, .delete]
}
