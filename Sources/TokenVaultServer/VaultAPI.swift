import Foundation
import Hummingbird
import Logging
import TokenVaultCore

/// The local API: authorisation by peer credentials, JSON in, JSON or problem+json out.
/// Every vault call hops to the blocking pool; nothing here blocks an event loop.
public struct VaultAPI: Sendable {
    public struct Options: Sendable {
        /// Provider instances credentials may name; anything else is 422.
        public var providers: Set<String>
        public var maximumBodySize: Int
        public var version: String
        /// Where `POST /v1/admin/backup` writes its copies.
        public var backupDirectory: String

        public init(providers: Set<String>, maximumBodySize: Int = 64 * 1024, version: String, backupDirectory: String)
        {
            self.providers = providers
            self.maximumBodySize = maximumBodySize
            self.version = version
            self.backupDirectory = backupDirectory
        }
    }

    let vault: Vault
    let admin: any AdminStore
    let rotation: KeyRotation?
    let policy: AccessPolicy
    let audit: AuditRecorder
    let metrics: APIMetrics
    let options: Options
    let groups = GroupMembership()
    let startedAt = ContinuousClock.now

    public init(
        vault: Vault, admin: any AdminStore, rotation: KeyRotation?, policy: AccessPolicy, audit: AuditRecorder,
        metrics: APIMetrics = APIMetrics(), options: Options
    ) {
        self.vault = vault
        self.admin = admin
        self.rotation = rotation
        self.policy = policy
        self.audit = audit
        self.metrics = metrics
        self.options = options
    }

    public func register(on router: Router<VaultRequestContext>) {
        router.get("/v1/health") { _, _ in try await health() }
        router.get("/metrics") { _, _ in try await scrape() }

        let credentials = router.group("/v1/credentials")
        credentials.get { request, context in try await list(request, context) }
        credentials.put(":namespace/:name") { request, context in try await put(request, context) }
        credentials.get(":namespace/:name") { request, context in try await show(request, context) }
        credentials.get(":namespace/:name/token") { request, context in try await token(request, context) }
        credentials.delete(":namespace/:name") { request, context in try await delete(request, context) }
        // These need the refresh engine and provider kinds (issues 4 and 5): until then they
        // answer 501 after the same authorisation as they will have.
        credentials.post(":namespace/:name/refresh") { _, context in
            try await notYetAvailable(context, .tokenRead, "credential.refresh", "forced refresh")
        }
        credentials.post(":namespace/:name/exchange") { _, context in
            try await notYetAvailable(context, .credentialWrite, "credential.exchange", "server-side code exchange")
        }
        credentials.get(":namespace/:name/watch") { _, context in
            try await notYetAvailable(context, .credentialList, "credential.watch", "the watch stream")
        }
        router.get("/v1/events") { _, context -> Response in
            _ = try await authoriseEventStream(context)
            throw ProblemDetails(
                .notImplemented, code: "not_implemented", detail: "the event stream arrives with the refresh engine")
        }

        let admin = router.group("/v1/admin")
        admin.post("rotate-key") { _, context in try await rotateKey(context) }
        admin.get("audit") { request, context in try await auditTrail(request, context) }
        admin.post("backup") { _, context in try await backup(context) }
    }

    func health() async throws -> Response {
        // One indexed read proves the database answers.
        let schemaVersion = try await blocking { [admin] in try admin.schemaVersion() }
        return try json(
            HealthDocument(
                status: "ok", version: options.version, database: .init(schemaVersion: schemaVersion),
                uptimeSeconds: Double((ContinuousClock.now - startedAt).components.seconds)))
    }

    func scrape() async throws -> Response {
        let counts = try await blocking { [admin] in try admin.credentialCountsByStatus() }
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition(credentialsByStatus: counts))))
    }

    func notYetAvailable(_ context: VaultRequestContext, _ permission: Permission, _ operation: String, _ what: String)
        async throws -> Response
    {
        _ = try await authorise(context, permission, id: try credentialID(context), operation: operation)
        throw ProblemDetails(
            .notImplemented, code: "not_implemented",
            detail: "\(what) arrives with the refresh engine and provider kinds; not available in this version")
    }
}
