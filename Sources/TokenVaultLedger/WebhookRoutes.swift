import TokenVaultCore

/// Which endpoints hear of which events (the `webhooks` section, replaced whole by a reload).
/// The ledger consults it inside each write's transaction and writes one outbox row per
/// endpoint that wants the event, so what an endpoint gets is decided when the change commits.
public struct WebhookRoutes: Sendable, Equatable {
    public struct Route: Sendable, Equatable {
        public var endpoint: String
        /// Nil: every kind.
        public var kinds: Set<WebhookEvent.Kind>?
        /// Nil: every namespace (events about no credential, such as a key rotation, reach
        /// only endpoints without a namespace filter).
        public var namespaces: Set<String>?

        public init(endpoint: String, kinds: Set<WebhookEvent.Kind>? = nil, namespaces: Set<String>? = nil) {
            self.endpoint = endpoint
            self.kinds = kinds
            self.namespaces = namespaces
        }

        public func wants(_ event: WebhookEvent) -> Bool {
            guard kinds?.contains(event.kind) ?? true else { return false }
            guard let namespaces else { return true }
            return event.credentialID.map { namespaces.contains($0.namespace) } ?? false
        }
    }

    public var routes: [Route]
    /// How long refreshes must have been failing before `refresh_failing` goes out: its row is
    /// written at the first failure, due this much later, and dropped if the credential
    /// recovers (or anything else is announced about it) first.
    public var failingAfterSeconds: Double

    public static let defaultFailingAfterSeconds = 900.0
    public static let none = WebhookRoutes(routes: [])

    public init(routes: [Route], failingAfterSeconds: Double = Self.defaultFailingAfterSeconds) {
        self.routes = routes
        self.failingAfterSeconds = failingAfterSeconds
    }

    public var isEmpty: Bool { routes.isEmpty }

    /// The endpoints that want `event`, in configuration order.
    public func endpoints(for event: WebhookEvent) -> [String] {
        routes.filter { $0.wants(event) }.map(\.endpoint)
    }
}
