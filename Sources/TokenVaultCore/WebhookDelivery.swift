/// One event on its way to one endpoint: a row of the outbox (`webhook_deliveries`). A row is
/// deleted once the endpoint took it; one that kept failing for the retry period stays, marked
/// `failed`, until an operator redelivers it (`tokenvault webhooks redeliver`).
public struct WebhookDelivery: Sendable, Equatable {
    public enum State: String, Sendable, Codable, CaseIterable {
        case pending
        /// Dead-lettered: retried for the whole retry period without success.
        case failed
    }

    /// Orders the outbox: an endpoint gets a credential's events in this order.
    public var id: Int64
    public var endpoint: String
    /// Standard Webhooks' `webhook-id`: the same on every attempt, so a receiver can drop a
    /// delivery it already processed.
    public var messageID: String
    public var kind: String
    public var credentialID: CredentialID?
    /// The body, exactly as signed and sent (`WebhookEvent.payload`).
    public var payload: [UInt8]
    public var createdAt: Timestamp
    public var state: State
    public var attempts: Int
    /// Not sent before this (a retry's backoff, or a `refresh_failing` waiting for its time).
    public var nextAttemptAt: Timestamp
    /// The last attempt's failure: an HTTP status or a transport error, never a body.
    public var lastError: String?
    /// The claim the node delivering it holds (nil: nobody's); a node whose claim was taken
    /// over changes nothing (`WebhookOutbox`).
    public var claim: String?
    /// The W3C `traceparent` of the request that caused it, sent with it (nil: none).
    public var traceparent: String?

    public init(
        id: Int64, endpoint: String, messageID: String, kind: String, credentialID: CredentialID?, payload: [UInt8],
        createdAt: Timestamp, state: State = .pending, attempts: Int = 0, nextAttemptAt: Timestamp,
        lastError: String? = nil, claim: String? = nil, traceparent: String? = nil
    ) {
        self.traceparent = traceparent
        self.id = id
        self.endpoint = endpoint
        self.messageID = messageID
        self.kind = kind
        self.credentialID = credentialID
        self.payload = payload
        self.createdAt = createdAt
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
        self.claim = claim
    }
}

/// An outbox row as a write adds it. Times are the database's (PostgreSQL's clock on a shared
/// vault, so a node whose clock is off neither sends early nor late).
public struct NewWebhookDelivery: Sendable, Equatable {
    public var endpoint: String
    public var messageID: String
    public var kind: String
    public var credentialID: CredentialID?
    public var payload: [UInt8]
    /// Due this many seconds after the commit (0: at once).
    public var delaySeconds: Double
    /// The W3C `traceparent` of the request that caused it (`TraceContext.current`).
    public var traceparent: String?

    public init(
        endpoint: String, messageID: String, kind: String, credentialID: CredentialID?, payload: [UInt8],
        delaySeconds: Double = 0, traceparent: String? = nil
    ) {
        self.traceparent = traceparent
        self.endpoint = endpoint
        self.messageID = messageID
        self.kind = kind
        self.credentialID = credentialID
        self.payload = payload
        self.delaySeconds = delaySeconds
    }
}

/// The outbox as the dispatcher and the operator's command see it (the ledger adds rows through
/// `CredentialWriter`). Every time is the database's own.
public protocol WebhookOutbox: Sendable {
    /// Up to `limit` due pending rows for `endpoints`, each the oldest pending row of its
    /// endpoint and credential (a credential's events go out in order), that nobody holds a live
    /// claim on; claimed for `leaseSeconds` under a new claim named after `owner` (this node),
    /// which the rows carry.
    func claimWebhookDeliveries(owner: String, endpoints: [String], leaseSeconds: Double, limit: Int) async throws
        -> [WebhookDelivery]
    /// Drops the claims `owner` holds (a node starting again holds none: its deliveries died with
    /// its last process); returns how many.
    func releaseWebhookClaims(owner: String) async throws -> Int
    /// The endpoint took it: the row goes. False when the claim was no longer this one's.
    func finishWebhookDelivery(id: Int64, claim: String) async throws -> Bool
    /// Failed: tried again `afterSeconds` from now, or, with nil, dead-lettered. False when the
    /// claim was no longer this one's.
    func failWebhookDelivery(id: Int64, claim: String, error: String, retryAfterSeconds: Double?) async throws -> Bool
    /// Rows in `state` (nil: every state), oldest first, after id `after`.
    func webhookDeliveries(state: WebhookDelivery.State?, after: Int64?, limit: Int) async throws -> [WebhookDelivery]
    /// Makes failed rows (these ids, or every failed row with nil) pending and due at once, with
    /// their attempts counted from zero again; returns how many.
    func redeliverWebhooks(ids: [Int64]?) async throws -> Int
}
