/// The smaller API documents. JSON keys are the API's snake_case; times are RFC 3339 strings.

/// `GET /v1/health`.
public struct Health: Codable, Sendable, Equatable {
    /// `ok` or `degraded` (serving, but something needs attention; see the daemon's log).
    public var status: String
    /// The daemon's version.
    public var version: String
    /// Optional here although the API requires it, so an older daemon still answers health checks.
    public var database: Database?
    public var uptimeSeconds: Double
    /// Each provider instance's condition (optional for older daemons).
    public var providers: [Provider]?

    public struct Database: Codable, Sendable, Equatable {
        /// The newest applied migration; nil while the database does not answer.
        public var schemaVersion: Int?
        /// `sqlite` or `postgres`.
        public var backend: String?
        public var reachable: Bool?
        /// PostgreSQL only: the server's standbys, and a failover being reconciled.
        public var replication: Replication?
        enum CodingKeys: String, CodingKey { case schemaVersion = "schema_version", backend, reachable, replication }
    }

    public struct Replication: Codable, Sendable, Equatable {
        /// Standbys streaming from the server.
        public var standbys: Int
        /// Whether a commit waits for a standby.
        public var synchronous: Bool
        public var timeline: Int64?
        public var reconciledTimeline: Int64?
        /// Why refreshes wait after a failover, while they do.
        public var hold: String?
        enum CodingKeys: String, CodingKey {
            case standbys, synchronous, timeline, reconciledTimeline = "reconciled_timeline", hold
        }
    }

    public struct Provider: Codable, Sendable, Equatable {
        public var name: String
        public var kind: String
        /// `ok`, `circuit_open`, `misconfigured`, `not_configured`, …
        public var condition: String
        public var detail: String?
    }

    enum CodingKeys: String, CodingKey {
        case status, version, database, uptimeSeconds = "uptime_seconds", providers
    }
}

/// `GET /v1/admin/status`: health and what an operator looks at next.
public struct DaemonStatus: Codable, Sendable, Equatable {
    public var health: Health
    /// Credentials in each status; nil while the database does not answer.
    public var credentials: [String: Int]?
    /// When the next scheduled refresh is due (RFC 3339); nil when none is scheduled.
    public var nextRefreshAt: String?
    public var audit: Audit

    public struct Audit: Codable, Sendable, Equatable {
        /// Rows in the audit trail; nil while the database does not answer.
        public var rows: Int?
        /// Rows recorded and not written yet.
        public var pending: Int
        public var writeFailures: Int
        enum CodingKeys: String, CodingKey { case rows, pending, writeFailures = "write_failures" }
    }

    enum CodingKeys: String, CodingKey { case health, credentials, nextRefreshAt = "next_refresh_at", audit }
}

/// One page of `GET /v1/credentials`.
public struct CredentialPage: Codable, Sendable, Equatable {
    public var items: [CredentialMetadata]
    /// Pass as `cursor` for the next page; nil on the last page.
    public var nextCursor: String?

    enum CodingKeys: String, CodingKey { case items, nextCursor = "next_cursor" }
}

/// What `DELETE` did.
public enum DeleteResult: Sendable, Equatable {
    /// The credential and its secrets are gone. `revoked`: whether the provider confirmed
    /// revocation of its tokens (false when it has no revocation endpoint or `force` skipped a
    /// failed one; nil from a daemon that does not say).
    case deleted(revoked: Bool?)
    /// Revocation at the provider failed; the credential stays `revoke_pending` (its tokens no
    /// longer served) and the daemon retries, deleting it once revocation succeeds.
    case revocationPending(CredentialMetadata)
}

/// One audit row. Never a token value.
public struct AuditEvent: Codable, Sendable, Equatable {
    public var id: Int64
    public var at: String
    /// The peer's uid, gid and pid; absent for operations of the CLI on the database directly.
    public var uid: Int64?
    public var gid: Int64?
    public var pid: Int64?
    /// For example `credential.put`, `token.read`, `admin.rotate_key`.
    public var operation: String
    public var credentialID: String?
    /// `allowed`, `denied`, `succeeded` or `failed`.
    public var outcome: String
    /// Why, for denials and failures.
    public var detail: String?
    /// How many events the row stands for: token reads are one row per caller, credential and
    /// outcome per interval (1 from a daemon that does not say).
    public var count: Int
    /// The last of an aggregated row's events.
    public var lastAt: String?

    enum CodingKeys: String, CodingKey {
        case id, at, uid, gid, pid, operation, outcome, detail, count
        case credentialID = "credential_id"
        case lastAt = "last_at"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        at = try container.decode(String.self, forKey: .at)
        uid = try container.decodeIfPresent(Int64.self, forKey: .uid)
        gid = try container.decodeIfPresent(Int64.self, forKey: .gid)
        pid = try container.decodeIfPresent(Int64.self, forKey: .pid)
        operation = try container.decode(String.self, forKey: .operation)
        credentialID = try container.decodeIfPresent(String.self, forKey: .credentialID)
        outcome = try container.decode(String.self, forKey: .outcome)
        detail = try container.decodeIfPresent(String.self, forKey: .detail)
        count = try container.decodeIfPresent(Int.self, forKey: .count) ?? 1
        lastAt = try container.decodeIfPresent(String.self, forKey: .lastAt)
    }
}

/// One page of `GET /v1/admin/audit`, newest first unless asked for the oldest first.
public struct AuditPage: Codable, Sendable, Equatable {
    public var items: [AuditEvent]
    /// Pass as `cursor` for the next page (older rows, or newer ones oldest first); nil on the last.
    public var nextCursor: String?

    enum CodingKeys: String, CodingKey { case items, nextCursor = "next_cursor" }
}

/// `POST /v1/admin/rotate-key`.
public struct RotateKeyResult: Codable, Sendable, Equatable {
    /// The data key term now active.
    public var newTerm: Int64
    /// Credentials re-sealed under the new term.
    public var resealed: Int
    /// Terms deleted because no row uses them any more.
    public var removedTerms: [Int64]
    /// Old terms still in use (a concurrent writer); another rotation finishes them.
    public var remainingTerms: [Int64]

    enum CodingKeys: String, CodingKey {
        case newTerm = "new_term", resealed, removedTerms = "removed_terms", remainingTerms = "remaining_terms"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        newTerm = try container.decode(Int64.self, forKey: .newTerm)
        resealed = try container.decode(Int.self, forKey: .resealed)
        removedTerms = try container.decode([Int64].self, forKey: .removedTerms)
        remainingTerms = try container.decodeIfPresent([Int64].self, forKey: .remainingTerms) ?? []
    }
}

/// `POST /v1/admin/backup`.
public struct BackupResult: Codable, Sendable, Equatable {
    /// Absolute path of the copy, in the data directory's `backups/` folder.
    public var path: String
    public var bytes: Int64
}
