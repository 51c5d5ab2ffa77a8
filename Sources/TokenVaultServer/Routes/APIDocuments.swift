import TokenVaultCore

struct HealthDocument: Encodable, Equatable {
    struct Database: Encodable, Equatable {
        /// Whether the database answered this request (nil schema version when it did not).
        let reachable: Bool
        let schemaVersion: Int?
        /// Provider answers held in memory because the database has not taken them yet.
        let heldCommits: Int
        /// While answers are held: why the database did not take the latest (a full disk, say).
        let writeError: String?
        let backend: String
        /// PostgreSQL only: whether this node hears the other nodes' changes.
        let changeFeed: ChangeFeed?
        /// PostgreSQL only: the server's standbys and timeline, and this node's reconciliation.
        let replication: Replication?
        enum CodingKeys: String, CodingKey {
            case reachable, schemaVersion = "schema_version", heldCommits = "held_commits", backend
            case changeFeed = "change_feed", writeError = "write_error", replication
        }
    }
    /// What a failover could lose and whether one is being reconciled (docs/scale-out.md).
    struct Replication: Encodable, Equatable {
        /// Standbys streaming from the server (as a node without monitoring rights sees them).
        let standbys: Int
        /// Whether a commit waits for a standby; false with standbys: a failover can lose the
        /// last commits, which the nodes keep and re-apply.
        let synchronous: Bool
        let timeline: Int64?
        /// The timeline this node re-applied what it keeps for.
        let reconciledTimeline: Int64?
        /// Why refreshes wait after a failover, while they do.
        let hold: String?
        enum CodingKeys: String, CodingKey {
            case standbys, synchronous, timeline, reconciledTimeline = "reconciled_timeline", hold
        }
    }
    struct ChangeFeed: Encodable, Equatable {
        let connected: Bool
        let reconnects: Int
    }
    struct Provider: Encodable, Equatable {
        let name: String
        let kind: String
        let condition: String
        let detail: String?
        let inFlight: Int
        enum CodingKeys: String, CodingKey { case name, kind, condition, detail, inFlight = "in_flight" }

        init(_ state: ProviderState) {
            name = state.name
            kind = state.kind
            condition = state.condition.rawValue
            detail = state.detail
            inFlight = state.inFlight
        }
    }
    /// The process that makes provider calls and keeps their answers past a daemon crash.
    struct Courier: Encodable, Equatable {
        let state: String
        let pid: Int32?
        let callsInFlight: Int
        let unsettledAnswers: Int
        let restarts: Int
        let answersRecovered: Int
        let refusedSpoolFiles: Int
        enum CodingKeys: String, CodingKey {
            case state, pid, callsInFlight = "calls_in_flight", unsettledAnswers = "unsettled_answers", restarts
            case answersRecovered = "answers_recovered", refusedSpoolFiles = "refused_spool_files"
        }

        init(_ status: CourierStatus) {
            state = status.isUp ? "up" : "down"
            pid = status.pid
            callsInFlight = status.callsInFlight
            unsettledAnswers = status.unsettled
            restarts = status.restarts
            answersRecovered = status.recovered
            refusedSpoolFiles = status.refusedSpoolFiles
        }
    }
    let status: String
    let version: String
    let database: Database
    let uptimeSeconds: Double
    let providers: [Provider]
    let courier: Courier?
    enum CodingKeys: String, CodingKey {
        case status, version, database, uptimeSeconds = "uptime_seconds", providers, courier
    }
}

/// One line of `/v1/events` (NDJSON): what happened to which credential, never a secret.
/// `type` is `stored`, `refreshed`, `refresh_failed`, `status_changed` or `deleted`.
struct EventDocument: Encodable {
    struct Failure: Encodable {
        let code: String
        let message: String
    }
    let type: String
    let credentialID: String
    let at: String
    /// Absent only from an `authorization_failed` of a credential that does not exist.
    let status: String?
    let generation: Int64?
    let error: Failure?
    enum CodingKeys: String, CodingKey { case type, credentialID = "credential_id", at, status, generation, error }

    init?(_ event: CredentialEvent) {
        let failedSignIn = event.kind == .authorizationFailed
        let metadata = event.metadata
        guard metadata != nil || failedSignIn else { return nil }
        switch event.kind {
        case .stored: type = "stored"
        case .refreshed: type = "refreshed"
        case .failing, .needsReauth: type = "refresh_failed"
        case .revokePending, .expired: type = "status_changed"
        case .deleted: type = "deleted"
        case .authorized: type = "authorized"
        case .authorizationFailed: type = "authorization_failed"
        }
        credentialID = event.id.description
        at = event.at.description
        status = metadata?.status.rawValue
        generation = metadata?.generation
        if failedSignIn {
            error = Failure(
                code: event.reason ?? "authorization_failed", message: "the device sign-in ended without tokens")
        } else {
            error =
                type == "refresh_failed" || event.kind == .revokePending
                ? metadata?.lastError.map { Failure(code: $0.code, message: $0.message) } : nil
        }
    }
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

/// One page of a listing; `next_cursor` is always present (`null` on the last page).
struct PageDocument<Item: Encodable>: Encodable {
    let items: [Item]
    let nextCursor: String?
    enum CodingKeys: String, CodingKey { case items, nextCursor = "next_cursor" }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(items, forKey: .items)
        try container.encode(nextCursor, forKey: .nextCursor)
    }
}

/// One item of `GET /v1/proxy/credentials`.
struct UsableCredentialDocument: Encodable {
    let id: String
    let provider: String
    let status: String
    let apiBaseURLs: [String]
    enum CodingKeys: String, CodingKey { case id, provider, status, apiBaseURLs = "api_base_urls" }
}

struct RotateKeyDocument: Encodable {
    let newTerm: UInt32
    let resealed: Int
    let removedTerms: [UInt32]
    let remainingTerms: [UInt32]
    enum CodingKeys: String, CodingKey {
        case newTerm = "new_term", resealed, removedTerms = "removed_terms", remainingTerms = "remaining_terms"
    }
}

struct AuditEventDocument: Encodable {
    let id: Int64
    let at: String
    let uid: UInt32?
    let gid: UInt32?
    let pid: Int32?
    let operation: String
    let credentialID: String?
    let outcome: String
    let detail: String?
    /// How many events the row stands for (token reads are aggregated).
    let count: Int
    let lastAt: String?
    enum CodingKeys: String, CodingKey {
        case id, at, uid, gid, pid, operation, credentialID = "credential_id", outcome, detail, count,
            lastAt = "last_at"
    }

    init(_ stored: StoredAuditEvent) {
        id = stored.id
        at = stored.event.at.description
        uid = stored.event.uid
        gid = stored.event.gid
        pid = stored.event.pid
        operation = stored.event.operation
        credentialID = stored.event.credentialID?.description
        outcome = stored.event.outcome.rawValue
        detail = stored.event.detail
        count = stored.event.count
        lastAt = stored.event.lastAt?.description
    }
}

struct BackupDocument: Encodable {
    let path: String
    let bytes: Int64
}

/// `GET /v1/admin/status`: `tokenvault status`.
struct StatusDocument: Encodable {
    struct Audit: Encodable {
        let rows: Int?
        let pending: Int
        let writeFailures: Int
        enum CodingKeys: String, CodingKey { case rows, pending, writeFailures = "write_failures" }
    }
    let health: HealthDocument
    /// Every status, with 0 for none; null when the database does not answer.
    let credentials: [String: Int]?
    let nextRefreshAt: String?
    let audit: Audit
    enum CodingKeys: String, CodingKey {
        case health, credentials, nextRefreshAt = "next_refresh_at", audit
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(health, forKey: .health)
        try container.encode(credentials, forKey: .credentials)
        try container.encode(nextRefreshAt, forKey: .nextRefreshAt)
        try container.encode(audit, forKey: .audit)
    }
}
