import Foundation
import Hummingbird
import NIOCore
import TokenVaultCore

extension VaultAPI {
    func put(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let peer = try await authorise(context, .credentialWrite, id: id, operation: "credential.put")
        try requireJSON(request)
        let body = try await collectBody(request)
        let (payload, provider, labels, planner) = try decodePut(body)
        let event = auditEvent(peer, "credential.put", id, .allowed)
        let metadata = try await vault.put(
            id, payload: payload, provider: provider, labels: labels, audit: event, planner: planner)
        context.logger.info(
            "credential stored",
            metadata: [
                "tokenvault.credential.id": "\(id)", "tokenvault.credential.generation": "\(metadata.generation)",
            ])
        var response = try json(CredentialMetadataDocument(metadata), status: metadata.generation == 1 ? .created : .ok)
        response.headers[.location] = "/v1/credentials/\(id.namespace)/\(id.name)"
        return response
    }

    func show(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let peer = try await authorise(context, .credentialList, id: id, operation: "credential.show")
        let metadata = try await blocking { try vault.metadata(id) }
        audit.record(auditEvent(peer, "credential.show", id, .allowed))
        return json(body: MetadataJSON.document(metadata, allocator: ByteBufferAllocator()))
    }

    func list(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let (rows, nextCursor) = try await page(
            request, context, permission: .credentialList, operation: "credential.list")
        return json(body: MetadataJSON.page(rows, nextCursor: nextCursor, allocator: ByteBufferAllocator()))
    }

    /// `GET /v1/proxy/credentials`: the credentials the caller may use through the proxy (in the
    /// namespaces where it holds `credential:use`), each with where it may be used. What an agent
    /// needs to choose one, and nothing more: no token, no labels, no times.
    func usable(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let (rows, nextCursor) = try await page(request, context, permission: .credentialUse, operation: "proxy.list")
        let table = vault.providers
        return try json(
            PageDocument(
                items: rows.map { metadata in
                    UsableCredentialDocument(
                        id: metadata.id.description, provider: metadata.provider, status: metadata.status.rawValue,
                        apiBaseURLs: table.settings[metadata.provider]?.apiBases.map(\.description) ?? [])
                }, nextCursor: nextCursor))
    }

    /// One page of the credentials in the namespaces where the caller holds `permission`, by the
    /// listing's query parameters (`namespace`, `status`, `limit`, `cursor`); 403 when it holds it
    /// nowhere, or not in the namespace asked for.
    private func page(
        _ request: Request, _ context: VaultRequestContext, permission: Permission, operation: String
    ) async throws -> (rows: [CredentialMetadata], nextCursor: String?) {
        let parameters = request.uri.queryParameters
        var query = CredentialQuery()
        if let namespace = parameters.get("namespace") {
            try CredentialID.validateNamespace(namespace)
            query.namespace = namespace
        }
        if let status = parameters.get("status") {
            guard let parsed = CredentialStatus(rawValue: status) else {
                throw VaultError.invalidField(
                    "status",
                    "'\(status)' is not one of \(CredentialStatus.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            query.status = parsed
        }
        query.limit = try limitParameter(request)
        if let cursor = parameters.get("cursor") {
            guard let after = try? CredentialID(cursor) else {
                throw VaultError.invalidField("cursor", "must be the next_cursor of a previous page")
            }
            query.after = after
        }
        let (peer, memberOf) = try await caller(context)
        let visible = policy.namespaces(uid: peer.uid, groups: memberOf, with: permission)
        if let namespace = query.namespace, let visible, !visible.contains(namespace) {
            throw await deny(
                peer, groups: memberOf, context, operation: operation, namespace: namespace, permission: permission)
        }
        if visible?.isEmpty == true {
            throw await deny(
                peer, groups: memberOf, context, operation: operation, namespace: nil, permission: permission)
        }
        // A peer allowed some namespaces gets a query over those only (the namespace index).
        query.namespaces = visible
        let rows = try await blocking { [query] in try vault.list(query) }
        return (rows, rows.count == query.limit ? rows.last?.id.description : nil)
    }

}
