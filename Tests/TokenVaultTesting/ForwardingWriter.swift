import TokenVaultCore

/// A `CredentialWriter` that passes every call to the transaction's writer: the base of test
/// doubles and benchmark probes that watch or disturb one or two calls and override only those.
open class ForwardingWriter: CredentialWriter {
    public let base: any CredentialWriter

    public init(_ base: any CredentialWriter) { self.base = base }

    open func record(_ id: CredentialID) async throws -> SealedCredentialRecord? { try await base.record(id) }
    open func activeTerm() async throws -> UInt32 { try await base.activeTerm() }
    open func save(_ record: SealedCredentialRecord) async throws { try await base.save(record) }
    open func delete(_ id: CredentialID) async throws -> Bool { try await base.delete(id) }

    open func lockAuditChain(_ chain: String) async throws { try await base.lockAuditChain(chain) }
    open func lastAuditRow(in chain: String) async throws -> (position: Int64, mac: [UInt8]?)? {
        try await base.lastAuditRow(in: chain)
    }
    open func newAuditIDs(_ count: Int) async throws -> [Int64] { try await base.newAuditIDs(count) }
    open func insertAudits(_ rows: [StoredAuditEvent]) async throws { try await base.insertAudits(rows) }
    open func deleteAudits(_ ids: [Int64]) async throws -> Int { try await base.deleteAudits(ids) }
    open func auditRows(after: Int64, limit: Int) async throws -> [StoredAuditEvent] {
        try await base.auditRows(after: after, limit: limit)
    }
    open func auditChainEnd(_ name: AuditChainEnd.Name, of chain: String) async throws -> AuditChainEnd? {
        try await base.auditChainEnd(name, of: chain)
    }
    open func setAuditChainEnd(_ end: AuditChainEnd) async throws { try await base.setAuditChainEnd(end) }
    open func auditRowCount() async throws -> Int { try await base.auditRowCount() }

    open func openAttempt(for id: CredentialID) async throws -> RefreshAttempt? { try await base.openAttempt(for: id) }
    open func nodeBeat(_ node: String) async throws -> Int64? { try await base.nodeBeat(node) }
    open func recordReceivedAnswer(_ callKey: String, credentialID: CredentialID, at: Timestamp) async throws {
        try await base.recordReceivedAnswer(callKey, credentialID: credentialID, at: at)
    }
    open func beginAttempt(_ attempt: RefreshAttempt) async throws { try await base.beginAttempt(attempt) }
    open func renewLease(attemptID: String, owner: String, until: Timestamp) async throws {
        try await base.renewLease(attemptID: attemptID, owner: owner, until: until)
    }
    open func finishAttempt(attemptID: String, state: RefreshAttempt.State, outcome: String?, at: Timestamp)
        async throws
    {
        try await base.finishAttempt(attemptID: attemptID, state: state, outcome: outcome, at: at)
    }
    open func closeSucceededAttempt(attemptID: String, owner: String) async throws -> Bool {
        try await base.closeSucceededAttempt(attemptID: attemptID, owner: owner)
    }
    open func isAttemptRecorded(_ attemptID: String) async throws -> Bool {
        try await base.isAttemptRecorded(attemptID)
    }
    open func timeline() async throws -> Int64? { try await base.timeline() }
    open func updateSchedule(_ update: ScheduleUpdate) async throws -> Bool { try await base.updateSchedule(update) }
    open func insertWebhookDeliveries(_ rows: [NewWebhookDelivery]) async throws {
        try await base.insertWebhookDeliveries(rows)
    }
    open func cancelDelayedWebhooks(for id: CredentialID, endpoint: String?) async throws -> Set<String> {
        try await base.cancelDelayedWebhooks(for: id, endpoint: endpoint)
    }
    open func savepoint<Result>(_ body: () async throws -> Result) async throws -> Result {
        try await base.savepoint(body)
    }
}
