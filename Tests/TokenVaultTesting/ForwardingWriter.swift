import TokenVaultCore

/// A `CredentialWriter` that passes every call to the transaction's writer: the base of test
/// doubles and benchmark probes that watch or disturb one or two calls and override only those.
open class ForwardingWriter: CredentialWriter {
    public let base: any CredentialWriter

    public init(_ base: any CredentialWriter) { self.base = base }

    open func record(_ id: CredentialID) throws -> SealedCredentialRecord? { try base.record(id) }
    open func activeTerm() throws -> UInt32 { try base.activeTerm() }
    open func save(_ record: SealedCredentialRecord) throws { try base.save(record) }
    open func delete(_ id: CredentialID) throws -> Bool { try base.delete(id) }

    open func lockAuditChain(_ chain: String) throws { try base.lockAuditChain(chain) }
    open func lastAuditRow(in chain: String) throws -> (position: Int64, mac: [UInt8]?)? {
        try base.lastAuditRow(in: chain)
    }
    open func newAuditIDs(_ count: Int) throws -> [Int64] { try base.newAuditIDs(count) }
    open func insertAudits(_ rows: [StoredAuditEvent]) throws { try base.insertAudits(rows) }
    open func deleteAudits(_ ids: [Int64]) throws -> Int { try base.deleteAudits(ids) }
    open func auditRows(after: Int64, limit: Int) throws -> [StoredAuditEvent] {
        try base.auditRows(after: after, limit: limit)
    }
    open func auditChainEnd(_ name: AuditChainEnd.Name, of chain: String) throws -> AuditChainEnd? {
        try base.auditChainEnd(name, of: chain)
    }
    open func setAuditChainEnd(_ end: AuditChainEnd) throws { try base.setAuditChainEnd(end) }
    open func auditRowCount() throws -> Int { try base.auditRowCount() }

    open func openAttempt(for id: CredentialID) throws -> RefreshAttempt? { try base.openAttempt(for: id) }
    open func nodeBeat(_ node: String) throws -> Int64? { try base.nodeBeat(node) }
    open func recordReceivedAnswer(_ callKey: String, credentialID: CredentialID, at: Timestamp) throws {
        try base.recordReceivedAnswer(callKey, credentialID: credentialID, at: at)
    }
    open func beginAttempt(_ attempt: RefreshAttempt) throws { try base.beginAttempt(attempt) }
    open func renewLease(attemptID: String, owner: String, until: Timestamp) throws {
        try base.renewLease(attemptID: attemptID, owner: owner, until: until)
    }
    open func finishAttempt(attemptID: String, state: RefreshAttempt.State, outcome: String?, at: Timestamp) throws {
        try base.finishAttempt(attemptID: attemptID, state: state, outcome: outcome, at: at)
    }
    open func closeSucceededAttempt(attemptID: String, owner: String) throws -> Bool {
        try base.closeSucceededAttempt(attemptID: attemptID, owner: owner)
    }
    open func updateSchedule(_ update: ScheduleUpdate) throws -> Bool { try base.updateSchedule(update) }
    open func insertWebhookDeliveries(_ rows: [NewWebhookDelivery]) throws { try base.insertWebhookDeliveries(rows) }
    open func cancelDelayedWebhooks(for id: CredentialID, endpoint: String?) throws -> Set<String> {
        try base.cancelDelayedWebhooks(for: id, endpoint: endpoint)
    }
    open func savepoint<Result>(_ body: () throws -> Result) throws -> Result { try base.savepoint(body) }
}
