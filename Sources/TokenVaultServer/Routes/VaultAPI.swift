import Foundation
import Hummingbird
import Logging
import TokenVaultCore
import TokenVaultLedger
import TokenVaultProviders

/// The local API: authorisation by peer credentials, JSON in, JSON or problem+json out.
/// Handlers await the vault, whose store answers from its cache of rows where the handler runs
/// and waits for the database on threads of its own; `TokenFastPath` answers plain token reads
/// on the event loop from the same cache. Nothing here waits for a lock on an event loop.
public struct VaultAPI: Sendable {
    public struct Options: Sendable {
        public var maximumBodySize: Int
        public var version: String
        /// Where `POST /v1/admin/backup` writes its copies.
        public var backupDirectory: String
        /// How long a uid's groups are remembered before the user database is read again.
        public var groupRefreshSeconds: Double
        /// The largest tokens a `PUT` may store.
        public var tokenSizes = TokenSizeLimits()
        /// Connections and streams per caller, request deadlines, stream heartbeats.
        public var connections = ConnectionLimits()
        /// The courier's state, for health and metrics (nil: no courier, as in tests).
        public var courier: (@Sendable () -> CourierStatus)?
        /// The database's kind and, on PostgreSQL, the change listener's state (nil: SQLite).
        public var storage: (@Sendable () -> StorageStatus)?
        /// The webhook dispatcher's counters (nil: no dispatcher).
        public var webhooks: (@Sendable () -> WebhookCounters)?
        /// How a uid's groups are read, given its primary gid (nil: the system's user database;
        /// tests give their own, to take a group away from a caller).
        public var groupLookUp: (@Sendable (_ uid: UInt32, _ primaryGID: UInt32) -> Set<UInt32>)?
        /// What the proxy lets through and how long it waits.
        public var proxy = ProxySettings()
        /// The clients the proxy calls upstreams with (nil: no proxy; its route answers 503).
        public var upstream: UpstreamClients?

        public init(
            maximumBodySize: Int = 64 * 1024, version: String, backupDirectory: String,
            groupRefreshSeconds: Double = 60,
            tokenSizes: TokenSizeLimits = TokenSizeLimits(), connections: ConnectionLimits = ConnectionLimits(),
            courier: (@Sendable () -> CourierStatus)? = nil, storage: (@Sendable () -> StorageStatus)? = nil
        ) {
            self.courier = courier
            self.storage = storage
            self.maximumBodySize = maximumBodySize
            self.version = version
            self.backupDirectory = backupDirectory
            self.groupRefreshSeconds = groupRefreshSeconds
            self.tokenSizes = tokenSizes
            self.connections = connections
        }
    }

    let vault: Vault
    /// The refresh engine; nil runs the API as a plain store (no refresh, revocation or streams).
    let engine: (any RefreshService)?
    let admin: any AdminStore
    let rotation: KeyRotation?
    /// Who may do what; a reload replaces its rules.
    public let livePolicy: LivePolicy
    var policy: AccessPolicy { livePolicy.policy }
    let audit: AuditRecorder
    let metrics: APIMetrics
    let options: Options
    let groups: GroupMembership
    /// Open connections and streams per caller (`limits.*`).
    let limiter: ConnectionLimiter
    let startedAt = ContinuousClock.now
    /// The router's routes, for telling 404 from 405 and, on the event loop, a path no route has.
    let routes = RouteTable()
    /// What health and metrics read from the database, at most once a second whoever asks.
    let schemaVersionRead = RecentValue<Int?>(maximumAge: .seconds(1))
    /// The health document's JSON, for the router and the event loop.
    let healthBody = LastEncoding<HealthDocument>()
    let countsRead = RecentValue<[CredentialStatus: Int]?>(maximumAge: .seconds(1))
    let backlogRead = RecentValue<[String: Int]?>(maximumAge: .seconds(1))
    /// Pages of the listing kept while current, for the router and the event loop.
    let pages: RenderedPages

    public init(
        vault: Vault, engine: (any RefreshService)? = nil, admin: any AdminStore, rotation: KeyRotation?,
        policy: AccessPolicy, audit: AuditRecorder, metrics: APIMetrics = APIMetrics(), options: Options
    ) {
        self.vault = vault
        pages = RenderedPages(vault: vault)
        self.engine = engine
        self.admin = admin
        self.rotation = rotation
        livePolicy = LivePolicy(policy)
        self.audit = audit
        self.metrics = metrics
        self.options = options
        groups = GroupMembership(
            refreshAfter: .seconds(options.groupRefreshSeconds),
            lookUp: options.groupLookUp ?? GroupMembership.systemLookUp)
        limiter = ConnectionLimiter(limits: options.connections)
    }

    /// Registers every route of `Route` on `router`.
    public func register(on router: Router<VaultRequestContext>) {
        for route in Route.allCases {
            for method in route.methods {
                router.on(RouterPath(route.template), method: method) { request, context in
                    try await respond(route, request, context)
                }
            }
        }
    }

    /// The handler of each route.
    private func respond(_ route: Route, _ request: Request, _ context: VaultRequestContext) async throws -> Response {
        switch route {
        case .health: try await health()
        case .metrics: try await scrape()
        case .list: try await list(request, context)
        case .put: try await put(request, context)
        case .show: try await show(request, context)
        case .token: try await token(request, context)
        case .delete: try await delete(request, context)
        case .refresh: try await forceRefresh(request, context)
        case .watch: try await watch(request, context)
        case .exchange: try await exchange(request, context)
        case .tokenExchange: try await exchangeToken(request, context)
        case .authorize: try await startSignIn(request, context)
        case .authorizationStatus: try await signInStatus(request, context)
        case .authorizeCallback: try await finishSignIn(request, context)
        case .proxy, .proxyPath: try await proxy(request, context)
        case .events: try await eventStream(request, context)
        case .usable: try await usable(request, context)
        case .rotateKey: try await rotateKey(context)
        case .audit: try await auditTrail(request, context)
        case .backup: try await backup(context)
        case .status: try await status(context)
        case .provider: try await providerDetails(context)
        case .providerKeys: try await providerKeys(context)
        }
    }

    /// `ok`, or `degraded` when a provider is misconfigured or its circuit is open, provider
    /// answers are held because the database refuses them, the courier is down, or spool files
    /// could not be used, the database does not answer or the change feed is down (the daemon
    /// still serves valid tokens). Always 200.
    func health() async throws -> Response { json(body: try healthBody.body(await healthDocument())) }

    func healthDocument() async throws -> HealthDocument {
        // One indexed read proves the database answers; when it does not, health still answers
        // (degraded): cached tokens may still be served, and the operator needs to see why.
        let schemaVersion = try await schemaVersionRead.get { [admin] in
            do {
                return try await admin.schemaVersion()
            } catch let error as VaultError where error.code == .storageUnavailable {
                return nil
            }
        }
        return healthDocument(schemaVersion: schemaVersion)
    }

    /// The document, given the database's answer (read at most once a second: the event loop
    /// builds it itself while that answer is recent).
    func healthDocument(schemaVersion: Int?) -> HealthDocument {
        let providers = engine?.providerStates() ?? []
        let held = vault.pendingCommitCount
        let courier = options.courier?()
        let storage = options.storage?() ?? StorageStatus(backend: "sqlite")
        let failoverHold = vault.failover.refusal()
        let degraded =
            held > 0 || providers.contains { $0.condition == .misconfigured || $0.condition == .circuitOpen }
            || courier.map { !$0.isUp || $0.refusedSpoolFiles > 0 } ?? false || storage.changeFeedConnected == false
            || schemaVersion == nil || failoverHold != nil
        return HealthDocument(
            status: degraded ? "degraded" : "ok", version: options.version,
            database: .init(
                reachable: schemaVersion != nil, schemaVersion: schemaVersion, heldCommits: held,
                writeError: held > 0 ? vault.heldCommitError : nil, backend: storage.backend,
                changeFeed: storage.changeFeedConnected.map {
                    .init(connected: $0, reconnects: storage.changeFeedReconnects ?? 0)
                },
                replication: storage.replication.map {
                    .init(
                        standbys: $0.standbys, synchronous: $0.synchronous, timeline: vault.failover.currentTimeline,
                        reconciledTimeline: vault.failover.reconciledTimeline, hold: failoverHold?.message)
                }),
            uptimeSeconds: Double((ContinuousClock.now - startedAt).components.seconds),
            providers: providers.map(HealthDocument.Provider.init),
            courier: courier.map(HealthDocument.Courier.init))
    }

    func scrape() async throws -> Response {
        // Without the database the counts are unknown (NaN), not the rest (its state is what matters then).
        let counts = try await countsRead.get { [admin] in
            try? await admin.credentialCountsByStatus()
        }
        let backlog = try await backlogRead.get { [admin] in
            try? await admin.webhookBacklog()
        }
        let commits = vault.commitCounters
        let body = metrics.exposition(
            credentialsByStatus: counts, refresh: engine?.counters, providers: engine?.providerStates() ?? [],
            heldCommits: .init(
                held: vault.pendingCommitCount, failures: commits.failures, recovered: commits.recovered),
            audit: audit.counters, courier: options.courier?(), storage: options.storage?(),
            webhooks: options.webhooks?(), upstreamClients: options.upstream?.count,
            clock: vault.clock as? CorrectedClock, webhookBacklog: backlog, keyTerm: vault.activeKeyTerm)
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
