import Foundation
import Hummingbird
import NIOCore
import TokenVaultCore

extension VaultAPI {
    func put(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let peer = try await authorise(context, .credentialWrite, id: id, operation: .credentialPut)
        try requireJSON(request)
        let body = try await collectBody(request)
        let (content, provider, labels) = try decodePut(body)
        switch content {
        case .tokens(let payload, let planner):
            let event = auditEvent(peer, .credentialPut, id, .allowed)
            let metadata = try await vault.put(
                id, payload: payload, provider: provider, labels: labels, audit: event, planner: planner)
            return stored(metadata, context, logged: "credential stored")
        case .grant(let grant):
            // The vault obtains the tokens itself: the caller never holds them.
            if let subject = grant.subject {
                try await checkSubject(subject, of: id, provider: provider, context)
            }
            let engine = try requireEngine()
            let event = auditEvent(peer, .credentialPut, id, .allowed, detail: grant.type.rawValue)
            let metadata: CredentialMetadata
            do {
                metadata = try await engine.obtain(
                    CredentialAcquisition(id: id, provider: provider, grant: grant, labels: labels, audit: event))
            } catch {
                throw auditedFailure(error, peer, .credentialPut, id, provider: provider)
            }
            return stored(metadata, context, logged: "credential obtained by its grant")
        }
    }

    /// A token exchange grant's subject: another credential of the same provider instance, which
    /// the caller may exchange (`token:exchange` in its namespace), as a caller's own exchange
    /// would need. Checked before anything is sent.
    private func checkSubject(
        _ subject: CredentialID, of id: CredentialID, provider: String, _ context: VaultRequestContext
    ) async throws {
        _ = try await authorise(context, .tokenExchange, id: subject, operation: .credentialPut)
        guard subject != id else { throw VaultError.invalidField("grant.subject", "must be another credential") }
        let metadata: CredentialMetadata
        do {
            metadata = try await vault.metadata(subject)
        } catch let error as VaultError where error.code == .credentialNotFound {
            throw VaultError.invalidField("grant.subject", "there is no credential \(subject)")
        }
        guard metadata.provider == provider else {
            throw VaultError.invalidField(
                "provider", "must be the subject's provider instance, \(metadata.provider): the exchange is made there")
        }
        // Derived from derived ones, a chain back to this credential would renew itself from its
        // own tokens, bounded by no sign-in: refused, as is a chain too long to follow.
        var next = metadata.grant?.subject
        for _ in 0..<Self.subjectChainLimit {
            guard let link = next else { return }
            guard link != id else {
                throw VaultError.invalidField("grant.subject", "\(subject) is derived from \(id): a cycle")
            }
            next = try? await vault.metadata(link).grant?.subject
        }
        throw VaultError.invalidField(
            "grant.subject", "\(subject) is derived through more than \(Self.subjectChainLimit) credentials")
    }

    /// How many derived credentials a put follows from its subject looking for a cycle.
    static let subjectChainLimit = 8

    func show(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let peer = try await authorise(context, .credentialList, id: id, operation: .credentialShow)
        let metadata = try await vault.shownMetadata(id)
        audit.record(auditEvent(peer, .credentialShow, id, .allowed))
        return json(metadata)
    }

    /// A page kept from an earlier read while nothing on it changed (`RenderedPages`), else read
    /// and kept if the vault can tell when it stops being current.
    func list(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let query = try await listingQuery(request, context, permission: .credentialList, operation: .credentialList)
        if let page = pages.page(for: query) { return json(body: page) }
        let mark = vault.listingMark()
        let (rows, nextCursor) = try await page(query)
        let body = MetadataJSON.page(rows, nextCursor: nextCursor, allocator: ByteBufferAllocator())
        if let mark { pages.keep(body, for: query, mark: mark) }
        return json(body: body)
    }

    /// `GET /v1/proxy/credentials`: the credentials the caller may use through the proxy (in the
    /// namespaces where it holds `credential:use`), each with where it may be used. What an agent
    /// needs to choose one, and nothing more: no token, no labels, no times.
    func usable(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let (rows, nextCursor) = try await page(
            try await listingQuery(request, context, permission: .credentialUse, operation: .proxyList))
        let table = vault.providers
        return try json(
            PageDocument(
                items: rows.map { metadata in
                    UsableCredentialDocument(
                        id: metadata.id.description, provider: metadata.provider, status: metadata.status.rawValue,
                        apiBaseURLs: table.settings[metadata.provider]?.apiBases.map(\.description) ?? [])
                }, nextCursor: nextCursor))
    }

    /// The page `query` reads, and its `next_cursor`: its last id when it is full, nil at the end.
    private func page(_ query: CredentialQuery) async throws -> (rows: [CredentialMetadata], nextCursor: String?) {
        let rows = try await vault.list(query)
        return (rows, rows.count == query.limit ? rows.last?.id.description : nil)
    }

    /// The query of the listing's parameters (`ListingParameters`) over the namespaces where the
    /// caller holds `permission`; 403 when it holds it nowhere, or not in the namespace asked for.
    private func listingQuery(
        _ request: Request, _ context: VaultRequestContext, permission: Permission, operation: AuditOperation
    ) async throws -> CredentialQuery {
        let parameters = request.uri.queryParameters
        let listing = try ListingParameters { parameters.get($0) }
        let (peer, memberOf) = try await caller(context)
        switch listing.scoped(to: policy.namespaces(uid: peer.uid, groups: memberOf, with: permission)) {
        case .query(let query):
            return query
        case .denied(let namespace):
            throw await deny(
                peer, groups: memberOf, context, operation: operation, namespace: namespace, permission: permission)
        }
    }
}
