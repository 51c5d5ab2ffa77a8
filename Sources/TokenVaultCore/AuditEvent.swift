/// One audit row: who did what to which credential, and how it ended. Never a token value.
/// Token reads are aggregated (`count` reads from `at` to `lastAt`); every other row is one event.
public struct AuditEvent: Sendable, Equatable {
    public enum Outcome: String, Sendable, Codable { case allowed, denied, succeeded, failed }

    public var at: Timestamp
    public var uid: UInt32?
    public var gid: UInt32?
    public var pid: Int32?
    /// An `AuditOperation`'s name.
    public var operation: String
    public var credentialID: CredentialID?
    public var outcome: Outcome
    public var detail: String?
    /// How many events the row stands for (aggregated token reads); 1 otherwise.
    public var count: Int
    /// The last of an aggregated row's events (nil for a single event).
    public var lastAt: Timestamp?

    public init(
        at: Timestamp, uid: UInt32? = nil, gid: UInt32? = nil, pid: Int32? = nil, operation: AuditOperation,
        credentialID: CredentialID? = nil, outcome: Outcome, detail: String? = nil, count: Int = 1,
        lastAt: Timestamp? = nil
    ) {
        self.at = at
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.operation = operation.name
        self.credentialID = credentialID
        self.outcome = outcome
        self.detail = detail
        self.count = count
        self.lastAt = lastAt
    }
}

/// An audit row as stored: its id (the cursor for paging, in the order rows were written), the
/// chain it belongs to with its place there, and its chain MAC (nil on rows written before the
/// chain existed).
public struct StoredAuditEvent: Sendable, Equatable {
    public var id: Int64
    /// The node's chain (`AuditChain`): "" is the vault's first one, which a SQLite vault keeps.
    public var chain: String
    /// 1, 2, 3… within `chain`: a gap is a removed row.
    public var position: Int64
    public var event: AuditEvent
    public var mac: [UInt8]?

    /// `position` defaults to `id`: in the first chain, written by one process, they are equal.
    public init(id: Int64, chain: String = "", position: Int64? = nil, event: AuditEvent, mac: [UInt8]? = nil) {
        self.id = id
        self.chain = chain
        self.position = position ?? id
        self.event = event
        self.mac = mac
    }
}
