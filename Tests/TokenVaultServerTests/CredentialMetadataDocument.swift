import TokenVaultCore

/// Credential metadata as docs/openapi.yaml describes it, written the Codable way: the model
/// `MetadataJSON`, which every route writes metadata with, is checked against field by field
/// (`MetadataJSONTests`). Times are RFC 3339 strings; there is deliberately no field that could
/// carry a secret.
struct CredentialMetadataDocument: Encodable, Sendable {
    let id: String
    let namespace: String
    let name: String
    let provider: String
    let kind: String
    let subject: String?
    let status: String
    let generation: Int64
    let tokenType: String?
    let scopes: [String]
    let labels: [String: String]
    let issuedAt: String
    let expiresAt: String?
    let refreshAt: String?
    let refreshTokenExpiresAt: String?
    let hasRefreshToken: Bool
    let hasIDToken: Bool
    let lastError: LastError?
    let refreshFailures: Int
    let createdAt: String
    let updatedAt: String
    /// Present while a provider's answer for this credential is held because the database has
    /// not taken it (see `PendingCommit`).
    let pendingCommit: Pending?
    /// The grant the vault renews the credential by, as the API shows it: all but the subject's
    /// creation, which the vault keeps to itself.
    let grant: Grant?

    struct Grant: Encodable, Sendable {
        let type: String
        let scopes: [String]
        let audience: [String]
        let resource: [String]
        let subject: String?
        let requestedTokenType: String?
        enum CodingKeys: String, CodingKey {
            case type, scopes, audience, resource, subject, requestedTokenType = "requested_token_type"
        }
    }

    struct Pending: Encodable, Sendable {
        let since: String
        let failures: Int
        let lastError: String
        let nextAttemptAt: String
        enum CodingKeys: String, CodingKey {
            case since, failures, lastError = "last_error", nextAttemptAt = "next_attempt_at"
        }
    }

    struct LastError: Encodable, Sendable {
        let code: String
        let message: String
        let at: String
    }

    enum CodingKeys: String, CodingKey {
        case id, namespace, name, provider, kind, subject, status, generation, scopes, labels
        case tokenType = "token_type", issuedAt = "issued_at", expiresAt = "expires_at", refreshAt = "refresh_at"
        case refreshTokenExpiresAt = "refresh_token_expires_at", hasRefreshToken = "has_refresh_token"
        case hasIDToken = "has_id_token", lastError = "last_error", refreshFailures = "refresh_failures", createdAt =
            "created_at", updatedAt = "updated_at", pendingCommit = "pending_commit", grant
    }

    init(_ metadata: CredentialMetadata) {
        id = metadata.id.description
        namespace = metadata.id.namespace
        name = metadata.id.name
        provider = metadata.provider
        kind = metadata.kind.rawValue
        subject = metadata.subject
        status = metadata.status.rawValue
        generation = metadata.generation
        tokenType = metadata.tokenType
        scopes = metadata.scopes
        labels = metadata.labels
        issuedAt = metadata.issuedAt.description
        expiresAt = metadata.expiresAt?.description
        refreshAt = metadata.refreshAt?.description
        refreshTokenExpiresAt = metadata.refreshTokenExpiresAt?.description
        hasRefreshToken = metadata.hasRefreshToken
        hasIDToken = metadata.hasIDToken
        lastError = metadata.lastError.map { LastError(code: $0.code, message: $0.message, at: $0.at.description) }
        refreshFailures = metadata.refreshFailures
        createdAt = metadata.createdAt.description
        updatedAt = metadata.updatedAt.description
        grant = metadata.grant.map {
            Grant(
                type: $0.type.rawValue, scopes: $0.scopes, audience: $0.audiences, resource: $0.resources,
                subject: $0.subject?.description, requestedTokenType: $0.requestedTokenType)
        }
        pendingCommit = metadata.pendingCommit.map {
            Pending(
                since: $0.since.description, failures: $0.failures, lastError: $0.lastError,
                nextAttemptAt: $0.nextAttemptAt.description)
        }
    }
}
