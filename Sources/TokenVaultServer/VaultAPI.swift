import Foundation
import Hummingbird
import NIOCore
import Logging
import TokenVaultCore

/// The `/v1` routes: authorisation by peer credentials, JSON in, JSON or problem+json out.
/// Every vault call hops to the blocking pool; nothing here blocks an event loop.
public struct VaultAPI: Sendable {
    public struct Options: Sendable {
        /// Provider instances credentials may name; anything else is 422.
        public var providers: Set<String>
        public var maximumBodySize: Int
        public var version: String

        public init(providers: Set<String>, maximumBodySize: Int = 64 * 1024, version: String) {
            self.providers = providers
            self.maximumBodySize = maximumBodySize
            self.version = version
        }
    }

    let vault: Vault
    let policy: AccessPolicy
    let audit: AuditRecorder
    let options: Options
    let groups = GroupMembership()
    let startedAt = ContinuousClock.now

    public init(vault: Vault, policy: AccessPolicy, audit: AuditRecorder, options: Options) {
        self.vault = vault
        self.policy = policy
        self.audit = audit
        self.options = options
    }

    public func register(on router: Router<VaultRequestContext>) {
        router.get("/v1/health") { _, _ in try await health() }
        let credential = router.group("/v1/credentials")
        credential.get { request, context in try await list(request, context) }
        credential.put(":namespace/:name") { request, context in try await put(request, context) }
        credential.get(":namespace/:name") { request, context in try await show(request, context) }
        credential.get(":namespace/:name/token") { request, context in try await token(request, context) }
        credential.delete(":namespace/:name") { request, context in try await delete(request, context) }
    }

    // MARK: Routes

    func health() async throws -> Response {
        // One indexed read proves the database answers.
        _ = try await blocking { [vault] in try vault.list(CredentialQuery(limit: 1)).count }
        return try json(
            HealthDocument(
                status: "ok", version: options.version,
                uptimeSeconds: Int((ContinuousClock.now - startedAt).components.seconds)))
    }

    func put(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let peer = try await authorise(context, .credentialWrite, id: id, operation: "credential.put")
        let body = try await collectBody(request)
        let (payload, provider, labels) = try decodePut(body)
        let event = auditEvent(peer, "credential.put", id, .allowed)
        let metadata = try await blocking {
            try vault.put(id, payload: payload, provider: provider, labels: labels, audit: event)
        }
        context.logger.info(
            "credential stored",
            metadata: ["tokenvault.credential.id": "\(id)", "tokenvault.credential.generation": "\(metadata.generation)"])
        return try json(CredentialMetadataDocument(metadata), status: metadata.generation == 1 ? .created : .ok)
    }

    func show(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let peer = try await authorise(context, .credentialList, id: id, operation: "credential.show")
        let metadata = try await blocking { try vault.metadata(id) }
        audit.record(auditEvent(peer, "credential.show", id, .allowed))
        return try json(CredentialMetadataDocument(metadata))
    }

    func token(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let minimumTTL = try request.uri.queryParameters.get("min_ttl").map { text -> Double in
            guard let seconds = Double(text), seconds >= 0, seconds <= 86_400 else {
                throw ProblemDetails(
                    .badRequest, code: "invalid_field", detail: "min_ttl must be 0-86400 seconds", field: "min_ttl")
            }
            return seconds
        } ?? 0
        let peer = try await authorise(context, .tokenRead, id: id, operation: "token.read")
        let credential = try await blocking { try vault.credential(id) }
        let now = vault.clock.now
        if let expiresAt = credential.metadata.expiresAt, expiresAt < now.adding(seconds: minimumTTL) {
            audit.record(auditEvent(peer, "token.read", id, .failed, detail: "token_expired"))
            throw ProblemDetails(
                .conflict, code: "token_expired",
                detail: "the access token of \(id) expires at \(expiresAt), sooner than min_ttl=\(Int(minimumTTL)) s")
        }
        audit.record(auditEvent(peer, "token.read", id, .allowed))
        return try json(
            TokenDocument(
                accessToken: credential.secrets.accessToken.revealString(),
                tokenType: credential.metadata.tokenType ?? "Bearer",
                expiresAt: credential.metadata.expiresAt?.description,
                idToken: credential.secrets.idToken?.revealString()))
    }

    func delete(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let peer = try await authorise(context, .credentialWrite, id: id, operation: "credential.delete")
        let event = auditEvent(peer, "credential.delete", id, .allowed)
        try await blocking { try vault.delete(id, audit: event) }
        context.logger.info("credential deleted", metadata: ["tokenvault.credential.id": "\(id)"])
        return Response(status: .noContent)
    }

    func list(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let parameters = request.uri.queryParameters
        var query = CredentialQuery(limit: 100)
        if let namespace = parameters.get("namespace") {
            try CredentialID.validateNamespace(namespace)
            query.namespace = namespace
        }
        if let status = parameters.get("status") {
            guard let parsed = CredentialStatus(rawValue: status) else {
                throw ProblemDetails(
                    .badRequest, code: "invalid_field", detail: "status '\(status)' is not a credential status",
                    field: "status")
            }
            query.status = parsed
        }
        if let limit = parameters.get("limit") {
            guard let parsed = Int(limit), (1...500).contains(parsed) else {
                throw ProblemDetails(.badRequest, code: "invalid_field", detail: "limit must be 1-500", field: "limit")
            }
            query.limit = parsed
        }
        if let cursor = parameters.get("cursor") {
            guard let after = try? CredentialID(cursor) else {
                throw ProblemDetails(.badRequest, code: "invalid_field", detail: "cursor is not valid", field: "cursor")
            }
            query.after = after
        }
        let peer = try await PeerCredentials.read(from: context.channel)
        let memberOf = groups.groups(uid: peer.uid, primaryGID: peer.gid)
        let visible = policy.namespaces(uid: peer.uid, groups: memberOf, with: .credentialList)
        if let namespace = query.namespace, let visible, !visible.contains(namespace) {
            throw await deny(peer, context, operation: "credential.list", namespace: namespace, permission: .credentialList)
        }
        if visible?.isEmpty == true {
            throw await deny(peer, context, operation: "credential.list", namespace: nil, permission: .credentialList)
        }
        // Rows in namespaces the peer may not list are skipped, page by page.
        let page = try await blocking { [query] () -> ([CredentialMetadata], CredentialID?) in
            var items: [CredentialMetadata] = []
            var scan = query
            while items.count < query.limit {
                let rows = try vault.list(scan)
                items += rows.filter { visible?.contains($0.id.namespace) ?? true }
                guard rows.count == scan.limit, let last = rows.last else { return (items, nil) }
                scan.after = last.id
            }
            return (Array(items.prefix(query.limit)), items.count >= query.limit ? items[query.limit - 1].id : nil)
        }
        return try json(
            ListDocument(items: page.0.map(CredentialMetadataDocument.init), nextCursor: page.1?.description))
    }

    // MARK: Authorisation

    /// The peer, if it holds `permission` in the credential's namespace; otherwise an audit row
    /// and 403.
    func authorise(_ context: VaultRequestContext, _ permission: Permission, id: CredentialID, operation: String)
        async throws -> PeerCredentials
    {
        let peer = try await PeerCredentials.read(from: context.channel)
        let memberOf = groups.groups(uid: peer.uid, primaryGID: peer.gid)
        guard policy.allows(uid: peer.uid, groups: memberOf, permission, in: id.namespace) else {
            throw await deny(peer, context, operation: operation, id: id, namespace: id.namespace, permission: permission)
        }
        return peer
    }

    func deny(
        _ peer: PeerCredentials, _ context: VaultRequestContext, operation: String, id: CredentialID? = nil,
        namespace: String?, permission: Permission
    ) async -> ProblemDetails {
        audit.record(auditEvent(peer, operation, id, .denied, detail: "missing \(permission.rawValue)"))
        context.logger.notice(
            "request denied",
            metadata: [
                "tokenvault.peer.uid": "\(peer.uid)", "tokenvault.peer.pid": "\(peer.pid)",
                "tokenvault.operation": "\(operation)",
            ])
        let scope = namespace.map { "namespace '\($0)'" } ?? "any namespace"
        return ProblemDetails(
            .forbidden, code: "forbidden",
            detail: "uid \(peer.uid) lacks \(permission.rawValue) in \(scope)")
    }

    func auditEvent(
        _ peer: PeerCredentials, _ operation: String, _ id: CredentialID?, _ outcome: AuditEvent.Outcome,
        detail: String? = nil
    ) -> AuditEvent {
        AuditEvent(
            at: vault.clock.now, uid: peer.uid, gid: peer.gid, pid: peer.pid, operation: operation, credentialID: id,
            outcome: outcome, detail: detail)
    }

    // MARK: Input and output

    func credentialID(_ context: VaultRequestContext) throws -> CredentialID {
        try CredentialID(
            namespace: context.parameters.get("namespace") ?? "", name: context.parameters.get("name") ?? "")
    }

    func collectBody(_ request: Request) async throws -> ByteBuffer {
        do {
            return try await request.body.collect(upTo: options.maximumBodySize)
        } catch is NIOTooManyBytesError {
            throw ProblemDetails(
                .contentTooLarge, code: "payload_too_large",
                detail: "the request body is larger than \(options.maximumBodySize) bytes")
        }
    }

    func decodePut(_ body: ByteBuffer) throws -> (TokenPayload, String, [String: String]) {
        guard case .object(let fields)? = try? JSONDecoder().decode(JSONValue.self, from: Data(buffer: body)) else {
            throw VaultError.invalidPayload("the body must be a JSON object {\"provider\", \"labels\", \"token\"}")
        }
        guard case .string(let provider)? = fields["provider"] else {
            throw VaultError.invalidField("provider", "is required and must be a string")
        }
        guard options.providers.contains(provider) else {
            throw VaultError(
                code: "unknown_provider",
                message: "provider '\(provider)' is not configured (known: \(options.providers.sorted().joined(separator: ", ")))")
        }
        var labels: [String: String] = [:]
        switch fields["labels"] {
        case nil, .null: break
        case .object(let object):
            for (key, value) in object {
                guard case .string(let text) = value else {
                    throw VaultError.invalidField("labels", "values must be strings")
                }
                labels[key] = text
            }
        case let other?: throw VaultError.invalidField("labels", "expected an object, got \(other.typeName)")
        }
        guard case .object(let token)? = fields["token"] else {
            throw VaultError.invalidField("token", "is required and must be an object (the token payload)")
        }
        return (try TokenPayloadDecoder().decode(token), provider, labels)
    }

    func blocking<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await BlockingWork.run(body)
    }

    func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }
}

struct HealthDocument: Encodable {
    let status: String
    let version: String
    let uptimeSeconds: Int
    enum CodingKeys: String, CodingKey { case status, version, uptimeSeconds = "uptime_seconds" }
}

struct TokenDocument: Encodable {
    let accessToken: String
    let tokenType: String
    let expiresAt: String?
    let idToken: String?
    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token", tokenType = "token_type", expiresAt = "expires_at", idToken = "id_token"
    }
}

struct ListDocument: Encodable {
    let items: [CredentialMetadataDocument]
    let nextCursor: String?
    enum CodingKeys: String, CodingKey { case items, nextCursor = "next_cursor" }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(items, forKey: .items)
        try container.encode(nextCursor, forKey: .nextCursor)
    }
}
