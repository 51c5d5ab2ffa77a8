import Foundation

/// Everything about a credential that is not secret (the API's `Metadata` schema).
///
/// `kind` and `status` stay strings so that a newer daemon's values do not break decoding;
/// times are RFC 3339 strings in UTC (see ``date(_:)`` to parse one).
public struct CredentialMetadata: Codable, Sendable, Equatable, Hashable {
    /// `namespace/name`.
    public var id: String
    public var namespace: String
    public var name: String
    public var provider: String
    /// `oauth2` or `verify_token`.
    public var kind: String
    /// The id token's `sub` claim, read (not verified) for display.
    public var subject: String?
    /// `active`, `failing`, `needs_reauth`, `revoke_pending` or `expired`; shown only, never
    /// stored: `pending_authorization` while a device sign-in into a credential without tokens
    /// to serve waits for the person.
    public var status: String
    /// Incremented on every write of new tokens; 1 when created.
    public var generation: Int64
    public var tokenType: String?
    public var scopes: [String]
    public var labels: [String: String]
    public var issuedAt: String
    /// Absent when the provider did not say.
    public var expiresAt: String?
    /// When the refresh engine plans to refresh; absent when it never will.
    public var refreshAt: String?
    public var refreshTokenExpiresAt: String?
    public var hasRefreshToken: Bool
    public var hasIDToken: Bool
    /// The last failure recorded against the credential (never contains a token).
    public var lastError: LastError?
    /// Refresh (or revocation) failures since the last success; absent from older daemons.
    public var refreshFailures: Int?
    public var createdAt: String
    public var updatedAt: String
    /// Present while new tokens a provider issued are held in the daemon's memory because the
    /// database has not accepted them yet (retried until it does).
    public var pendingCommit: PendingCommit?
    /// The grant the daemon obtains and renews this credential by itself; absent for tokens a
    /// person's sign-in gave.
    public var grant: Grant?

    /// A grant the daemon makes itself, as `put(_:provider:grant:labels:)` sends it: a client
    /// credentials grant, or a token exchange of `subject`'s access token.
    public struct Grant: Codable, Sendable, Equatable, Hashable {
        /// `client_credentials` or `token_exchange`.
        public var type: String
        public var scopes: [String]
        public var audience: [String]
        public var resource: [String]
        /// A token exchange's subject credential (`namespace/name`).
        public var subject: String?
        /// A token exchange's `requested_token_type`.
        public var requestedTokenType: String?

        public init(
            type: String = "client_credentials", scopes: [String] = [], audience: [String] = [],
            resource: [String] = [], subject: String? = nil, requestedTokenType: String? = nil
        ) {
            self.type = type
            self.scopes = scopes
            self.audience = audience
            self.resource = resource
            self.subject = subject
            self.requestedTokenType = requestedTokenType
        }

        enum CodingKeys: String, CodingKey {
            case type, scopes, audience, resource, subject, requestedTokenType = "requested_token_type"
        }
    }

    public struct PendingCommit: Codable, Sendable, Equatable, Hashable {
        public var since: String
        /// Commits that failed so far.
        public var failures: Int
        /// Why the last one failed.
        public var lastError: String
        public var nextAttemptAt: String

        enum CodingKeys: String, CodingKey {
            case since, failures, lastError = "last_error", nextAttemptAt = "next_attempt_at"
        }
    }

    public struct LastError: Codable, Sendable, Equatable, Hashable {
        /// For example `invalid_grant`.
        public var code: String
        public var message: String
        public var at: String
    }

    enum CodingKeys: String, CodingKey {
        case id, namespace, name, provider, kind, subject, status, generation, scopes, labels
        case tokenType = "token_type", issuedAt = "issued_at", expiresAt = "expires_at", refreshAt = "refresh_at"
        case refreshTokenExpiresAt = "refresh_token_expires_at", hasRefreshToken = "has_refresh_token"
        case hasIDToken = "has_id_token", lastError = "last_error", refreshFailures = "refresh_failures", createdAt =
            "created_at", updatedAt = "updated_at", pendingCommit = "pending_commit", grant
    }

    /// Parses one of the API's RFC 3339 times (with or without fractional seconds).
    public static func date(_ text: String) -> Date? {
        RFC3339.date(text)
    }
}

/// RFC 3339 parsing for the API's times, which carry milliseconds (`2026-11-22T04:07:05.123Z`).
enum RFC3339 {
    static func date(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) {
            return date
        }
        return try? Date(text, strategy: Date.ISO8601FormatStyle())
    }
}
