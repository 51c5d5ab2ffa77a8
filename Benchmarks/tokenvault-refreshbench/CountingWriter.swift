import TokenVaultCore

/// Forwards every call to the transaction's writer and counts savepoints: the engine's group
/// commit runs each coalesced write in its own savepoint, so this is the batch size.
final class CountingWriter: CredentialWriter {
    let base: any CredentialWriter
    private(set) var savepoints = 0

    init(_ base: any CredentialWriter) {
        self.base = base
    }

    func record(_ id: CredentialID) throws -> SealedCredentialRecord? { try base.record(id) }
    func activeTerm() throws -> UInt32 { try base.activeTerm() }
    func save(_ record: SealedCredentialRecord) throws { try base.save(record) }
    func delete(_ id: CredentialID) throws -> Bool { try base.delete(id) }
    func appendAudit(_ event: AuditEvent) throws { try base.appendAudit(event) }
    func openAttempt(for id: CredentialID) throws -> RefreshAttempt? { try base.openAttempt(for: id) }
    func beginAttempt(_ attempt: RefreshAttempt) throws { try base.beginAttempt(attempt) }

    func renewLease(attemptID: String, owner: String, until: Timestamp) throws {
        try base.renewLease(attemptID: attemptID, owner: owner, until: until)
    }

    func finishAttempt(attemptID: String, state: RefreshAttempt.State, outcome: String?, at: Timestamp) throws {
        try base.finishAttempt(attemptID: attemptID, state: state, outcome: outcome, at: at)
    }

    func closeSucceededAttempt(attemptID: String, owner: String) throws -> Bool {
        try base.closeSucceededAttempt(attemptID: attemptID, owner: owner)
    }
    func updateSchedule(_ update: ScheduleUpdate) throws -> Bool { try base.updateSchedule(update) }

    func savepoint<Result>(_ body: () throws -> Result) throws -> Result {
        savepoints += 1
        return try base.savepoint(body)
    }
}
