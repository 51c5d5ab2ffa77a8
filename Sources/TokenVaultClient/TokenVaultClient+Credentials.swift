import Foundation
import NIOCore

/// `/v1/credentials`: store, read, list and delete. Ids are `namespace/name`.
extension TokenVaultClient {
    /// `PUT /v1/credentials/{namespace}/{name}`: stores or replaces a credential.
    ///
    /// - Parameter token: The token response exactly as the provider or SDK returned it, as a
    ///   raw JSON object; it is passed through untouched so the daemon seals every field.
    /// - Returns: The metadata, and whether the credential was created (`false`: replaced,
    ///   with `generation` incremented).
    @discardableResult
    public func put(_ id: String, provider: String, labels: [String: String] = [:], token: Data) async throws
        -> (metadata: CredentialMetadata, created: Bool)
    {
        let path = try Self.credentialPath(id)
        guard Self.isJSONObject(token) else {
            throw TokenVaultClientError.invalidArgument(
                "the token must be a JSON object (the token response as the provider or SDK gave it)")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var body = ByteBuffer()
        body.writeString(#"{"provider":"#)
        body.writeBytes(try encoder.encode(provider))
        body.writeString(#","labels":"#)
        body.writeBytes(try encoder.encode(labels))
        body.writeString(#","token":"#)
        body.writeBytes(token)
        body.writeString("}")
        let reply = try await send(.put, path, body: body, expecting: [200, 201])
        return (try reply.decode(CredentialMetadata.self), reply.status == 201)
    }

    /// `PUT /v1/credentials/{namespace}/{name}` with a `grant`: the daemon obtains the tokens itself
    /// (a client credentials grant of `provider`, or a token exchange of the grant's `subject`
    /// credential's access token) and renews them before they expire; the caller never holds
    /// them. A server refusing the grant is a problem with code `provider_rejected` (422).
    public func put(
        _ id: String, provider: String, grant: CredentialMetadata.Grant, labels: [String: String] = [:]
    ) async throws -> (metadata: CredentialMetadata, created: Bool) {
        struct Body: Encodable {
            var provider: String
            var labels: [String: String]
            var grant: CredentialMetadata.Grant
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let body = ByteBuffer(bytes: try encoder.encode(Body(provider: provider, labels: labels, grant: grant)))
        let reply = try await send(.put, try Self.credentialPath(id), body: body, expecting: [200, 201])
        return (try reply.decode(CredentialMetadata.self), reply.status == 201)
    }

    /// `GET /v1/credentials/{namespace}/{name}`: the metadata document; never a secret.
    public func metadata(_ id: String) async throws -> CredentialMetadata {
        try await send(.get, try Self.credentialPath(id)).decode(CredentialMetadata.self)
    }

    /// `GET /v1/credentials/{namespace}/{name}/token`: the current access token.
    ///
    /// - Parameter minTTL: Seconds the token must stay valid; when it would not, the daemon
    ///   answers a problem with code `token_expired` (409).
    public func token(_ id: String, minTTL: Int? = nil) async throws -> AccessToken {
        try await send(.get, try Self.credentialPath(id, "/token"), query: [("min_ttl", minTTL.map(String.init))])
            .decode(AccessToken.self)
    }

    /// `POST .../token-exchange`: a token derived from the credential's by RFC 8693 at its provider
    /// (another `audience` or `resource`, narrower `scopes`), never the credential's own. The
    /// daemon answers the same request from memory while the derived token lives.
    /// The subject is always the stored access token; give at least one of `audience`, `resource`
    /// and `scopes`.
    public func exchangeToken(
        _ id: String, audience: [String] = [], resource: [String] = [], scopes: [String] = [],
        requestedTokenType: String? = nil
    ) async throws -> AccessToken {
        struct Body: Encodable {
            let audience: [String]
            let resource: [String]
            let scopes: [String]
            let requestedTokenType: String?
            enum CodingKeys: String, CodingKey {
                case audience, resource, scopes
                case requestedTokenType = "requested_token_type"
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let body = try encoder.encode(
            Body(
                audience: audience, resource: resource, scopes: scopes, requestedTokenType: requestedTokenType))
        return try await send(
            .post, try Self.credentialPath(id, "/token-exchange"), body: ByteBuffer(bytes: body), timeout: .seconds(60)
        ).decode(AccessToken.self)
    }

    /// `GET /v1/credentials`: one page of metadata, ordered by id. Pass the previous page's
    /// `nextCursor` as `cursor` for the next one.
    ///
    /// - Parameters:
    ///   - status: A `CredentialMetadata.status` value such as `active` or `needs_reauth`.
    ///   - limit: Items per page, 1-500 (the daemon's default is 100).
    public func list(namespace: String? = nil, status: String? = nil, cursor: String? = nil, limit: Int? = nil)
        async throws -> CredentialPage
    {
        try await send(
            .get, "/v1/credentials",
            query: [
                ("namespace", namespace), ("status", status), ("cursor", cursor), ("limit", limit.map(String.init)),
            ]
        ).decode(CredentialPage.self)
    }

    /// Every matching credential, following cursors page by page (500 per request).
    public func listAll(namespace: String? = nil, status: String? = nil) async throws -> [CredentialMetadata] {
        try await allPages { cursor in
            let page = try await list(namespace: namespace, status: status, cursor: cursor, limit: 500)
            return (page.items, page.nextCursor)
        }
    }

    /// Every item of a paged listing: `page` is asked for the page after each cursor (nil: the
    /// first) until there is none. A daemon repeating a cursor would otherwise keep us here for ever.
    func allPages<Item>(_ page: (_ cursor: String?) async throws -> (items: [Item], next: String?)) async throws
        -> [Item]
    {
        var items: [Item] = []
        var cursor: String?
        var seen: Set<String> = []
        repeat {
            let (pageItems, next) = try await page(cursor)
            items += pageItems
            cursor = next
            if let next, !seen.insert(next).inserted {
                throw TokenVaultClientError.unexpectedResponse(
                    status: 200, detail: "the daemon returned the same list cursor twice")
            }
        } while cursor != nil
        return items
    }

    /// `DELETE /v1/credentials/{namespace}/{name}`.
    ///
    /// The daemon revokes the tokens at the provider first (when the provider has a revocation
    /// endpoint). If that fails the credential stays `revoke_pending` and the result is
    /// `.revocationPending` (the daemon retries in the background).
    ///
    /// - Parameter force: Delete even if revocation fails.
    @discardableResult
    public func delete(_ id: String, force: Bool = false) async throws -> DeleteResult {
        let reply = try await send(
            .delete, try Self.credentialPath(id), query: [("force", force ? "true" : nil)], expecting: [202, 204])
        guard reply.status == 202 else { return .deleted(revoked: reply.revoked) }
        return .revocationPending(try reply.decode(CredentialMetadata.self))
    }

    /// A cheap shape check that never parses (and so never copies) the secrets: the first and
    /// last non-blank bytes are braces. The daemon validates the rest.
    static func isJSONObject(_ data: Data) -> Bool {
        let blank: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        guard let first = data.first(where: { !blank.contains($0) }),
            let last = data.last(where: { !blank.contains($0) })
        else { return false }
        return first == UInt8(ascii: "{") && last == UInt8(ascii: "}")
    }
}
