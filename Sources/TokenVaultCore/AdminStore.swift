/// Storage operations for operators: the audit trail, consistent backups, schema facts.
public protocol AdminStore: Sendable {
    /// Appends audit rows, in order, in one transaction of their own (the audit recorder's batches).
    func appendAudits(_ events: [AuditEvent]) throws
    /// Audit rows with id greater than `after`, oldest first, optionally for one credential.
    func auditEvents(after: Int64?, credentialID: CredentialID?, limit: Int) throws -> [StoredAuditEvent]
    /// Writes a consistent copy of the database (ciphertext only) to `path`; returns its size.
    func backup(to path: String) throws -> Int64
    /// The newest applied migration's version.
    func schemaVersion() throws -> Int
    /// How many credentials are in each status (for metrics).
    func credentialCountsByStatus() throws -> [CredentialStatus: Int]
}

/// An audit row as stored, with its id (the cursor for paging).
public struct StoredAuditEvent: Sendable, Equatable {
    public var id: Int64
    public var event: AuditEvent

    public init(id: Int64, event: AuditEvent) {
        self.id = id
        self.event = event
    }
}
