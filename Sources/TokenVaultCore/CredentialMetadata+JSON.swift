/// The JSON shape of credential metadata shown to people and programs (CLI `--json`, API).
/// Times are RFC 3339 strings; there is deliberately no field that could carry a secret.
public struct CredentialMetadataDocument: Encodable, Sendable {
    public let id: String
    public let namespace: String
    public let name: String
    public let provider: String
    public let kind: String
    public let subject: String?
    public let status: String
    public let generation: Int64
    public let tokenType: String?
    public let scopes: [String]
    public let labels: [String: String]
    public let issuedAt: String
    public let expiresAt: String?
    public let refreshAt: String?
    public let refreshTokenExpiresAt: String?
    public let hasRefreshToken: Bool
    public let hasIDToken: Bool
    public let lastError: LastError?
    public let refreshFailures: Int
    public let createdAt: String
    public let updatedAt: String
    /// Present while a provider's answer for this credential is held because the database has
    /// not taken it (see `PendingCommit`).
    public let pendingCommit: Pending?

    public struct Pending: Encodable, Sendable {
        public let since: String
        public let failures: Int
        public let lastError: String
        public let nextAttemptAt: String
        enum CodingKeys: String, CodingKey {
            case since, failures, lastError = "last_error", nextAttemptAt = "next_attempt_at"
        }
    }

    public struct LastError: Encodable, Sendable {
        public let code: String
        public let message: String
        public let at: String
    }

    enum CodingKeys: String, CodingKey {
        case id, namespace, name, provider, kind, subject, status, generation, scopes, labels
        case tokenType = "token_type", issuedAt = "issued_at", expiresAt = "expires_at", refreshAt = "refresh_at"
        case refreshTokenExpiresAt = "refresh_token_expires_at", hasRefreshToken = "has_refresh_token"
        case hasIDToken = "has_id_token", lastError = "last_error", refreshFailures = "refresh_failures", createdAt =
            "created_at", updatedAt = "updated_at", pendingCommit = "pending_commit"
    }

    public init(_ metadata: CredentialMetadata) {
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
        pendingCommit = metadata.pendingCommit.map {
            Pending(
                since: $0.since.description, failures: $0.failures, lastError: $0.lastError,
                nextAttemptAt: $0.nextAttemptAt.description)
        }
    }
}
