import TokenVaultCore
import TokenVaultLedger

/// The `webhooks` section: where events go and how hard the daemon tries. Its numbers are in
/// the settings table (`webhooks.*`); the endpoints are read here. All of it is put in force by
/// a reload (SIGHUP) as well as at start-up.
///
/// ```json
/// "webhooks": {
///   "failing_after_seconds": 900,
///   "endpoints": {
///     "signin": {"url": "https://backend.internal/hooks/tokenvault", "secret_file": "/etc/tokenvault/signin.whsec",
///                "events": ["credential.needs_reauth", "credential.recovered"], "namespaces": ["payments"]}
///   }
/// }
/// ```
public struct WebhookSettings: Sendable, Equatable {
    public struct Endpoint: Sendable, Equatable {
        public var name: String
        public var url: String
        /// `whsec_` and base64, in a private file (`tokenvault webhooks secret` makes one).
        public var secretFile: String
        /// A PEM bundle trusted instead of the system roots, or beside them with `trustsSystemRoots`.
        public var caFile: String?
        /// With `caFile`, whether the system roots are trusted too (`trust_system_roots`).
        public var trustsSystemRoots = false
        /// Nil: every event.
        public var events: Set<WebhookEvent.Kind>?
        /// Nil: every namespace.
        public var namespaces: Set<String>?
    }

    /// By name.
    public var endpoints: [Endpoint] = []
    public var failingAfterSeconds = Int(WebhookRoutes.defaultFailingAfterSeconds)
    /// How long a delivery is retried before it is dead-lettered (three days by default).
    public var retryForSeconds = 3 * 86_400
    public var retryBaseSeconds = 5
    public var retryCapSeconds = 3600
    /// Waiting for the endpoint's answer (connecting takes at most `CallTimeouts`' default).
    public var timeoutSeconds = 30
    /// Deliveries in flight at once per endpoint.
    public var maximumConcurrentDeliveries = 4

    public init() {}

    /// Which endpoint hears of which event, for the ledger.
    public var routes: WebhookRoutes {
        WebhookRoutes(
            routes: endpoints.map {
                WebhookRoutes.Route(endpoint: $0.name, kinds: $0.events, namespaces: $0.namespaces)
            }, failingAfterSeconds: Double(failingAfterSeconds))
    }

    public var retry: WebhookRetry {
        WebhookRetry(
            baseSeconds: Double(retryBaseSeconds), capSeconds: Double(retryCapSeconds),
            periodSeconds: Double(retryForSeconds))
    }

    /// Reads `webhooks.endpoints` (the numbers come from the settings table).
    mutating func readEndpoints(_ section: JSONValue, path: String) throws {
        func fail(_ key: String, _ problem: String) -> ConfigurationError {
            ConfigurationError(file: path, key: key, problem: problem)
        }
        guard case .object(let members) = section else { throw fail("webhooks", "expected an object") }
        guard let value = members["endpoints"] else { return }
        guard case .object(let named) = value else { throw fail("webhooks.endpoints", "expected an object") }
        endpoints = try named.keys.sorted().map { name in
            let key = "webhooks.endpoints.\(name)"
            guard (1...64).contains(name.utf8.count),
                name.unicodeScalars.allSatisfy({
                    $0.isASCII
                        && ($0.properties.isAlphabetic || $0.properties.numericType != nil
                            || "_.-".unicodeScalars.contains($0))
                })
            else { throw fail(key, "an endpoint's name must be 1-64 of A-Z a-z 0-9 . _ -") }
            guard case .object(let fields) = named[name]! else { throw fail(key, "expected an object") }
            let known: Set<String> = ["url", "secret_file", "ca_file", "trust_system_roots", "events", "namespaces"]
            if let unknown = Set(fields.keys).subtracting(known).sorted().first {
                throw fail("\(key).\(unknown)", "is not a known setting")
            }
            func text(_ field: String, required: Bool) throws -> String? {
                switch fields[field] {
                case .string(let value)? where !value.isEmpty: return value
                case nil where !required: return nil
                default: throw fail("\(key).\(field)", "expected a non-empty string")
                }
            }
            func list(_ field: String) throws -> [String]? {
                guard let value = fields[field] else { return nil }
                guard case .array(let items) = value, !items.isEmpty else {
                    throw fail("\(key).\(field)", "expected a non-empty list of strings")
                }
                return try items.map {
                    guard case .string(let item) = $0 else {
                        throw fail("\(key).\(field)", "expected a non-empty list of strings")
                    }
                    return item
                }
            }
            let events = try list("events").map { names in
                Set(
                    try names.map { name in
                        guard let kind = WebhookEvent.Kind(rawValue: name) else {
                            throw fail(
                                "\(key).events",
                                "'\(name)' is not one of "
                                    + WebhookEvent.Kind.allCases.map(\.rawValue).joined(separator: ", "))
                        }
                        return kind
                    })
            }
            let caFile = try text("ca_file", required: false)
            var trustsSystemRoots = false
            switch fields["trust_system_roots"] {
            case nil: break
            case .bool(let trusts)? where caFile != nil: trustsSystemRoots = trusts
            case .bool?: throw fail("\(key).trust_system_roots", "is only meaningful with ca_file")
            default: throw fail("\(key).trust_system_roots", "expected true or false")
            }
            return Endpoint(
                name: name, url: try text("url", required: true)!, secretFile: try text("secret_file", required: true)!,
                caFile: caFile, trustsSystemRoots: trustsSystemRoots, events: events,
                namespaces: try list("namespaces").map(Set.init))
        }
    }
}
