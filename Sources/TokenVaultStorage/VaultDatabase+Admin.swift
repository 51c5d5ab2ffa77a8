import Foundation
import TokenVaultCore

extension VaultDatabase: AdminStore {
    public func appendAudits(_ events: [AuditEvent]) throws {
        try writeTransaction(durability: .normal) { connection in
            try SQLiteCredentialWriter(connection: connection).appendAudits(events)
        }
    }

    public func auditEvents(after: Int64?, credentialID: CredentialID?, limit: Int) throws -> [StoredAuditEvent] {
        try withReader { connection in
            let statement = try connection.statement(
                """
                SELECT id, at, actor_uid, actor_gid, actor_pid, operation, credential_id, outcome, detail
                FROM audit_events WHERE id > ?1 AND (?2 IS NULL OR credential_id = ?2) ORDER BY id LIMIT ?3
                """)
            try statement.bind(after ?? 0, credentialID?.description, max(0, limit))
            var events: [StoredAuditEvent] = []
            while try statement.step() {
                events.append(
                    StoredAuditEvent(
                        id: statement.int64(0),
                        event: AuditEvent(
                            at: Timestamp(milliseconds: statement.int64(1)),
                            uid: statement.optionalInt64(2).map { UInt32(truncatingIfNeeded: $0) },
                            gid: statement.optionalInt64(3).map { UInt32(truncatingIfNeeded: $0) },
                            pid: statement.optionalInt64(4).map { Int32(truncatingIfNeeded: $0) },
                            operation: statement.text(5) ?? "",
                            credentialID: statement.text(6).flatMap { try? CredentialID($0) },
                            outcome: AuditEvent.Outcome(rawValue: statement.text(7) ?? "") ?? .failed,
                            detail: statement.text(8))))
            }
            return events
        }
    }

    /// `VACUUM INTO`: a consistent, compacted copy taken while reads and writes continue.
    public func backup(to path: String) throws -> Int64 {
        guard !FileManager.default.fileExists(atPath: path) else {
            throw VaultError.conflict("backup file \(path) already exists")
        }
        // Readers are query_only, which SQLite applies to VACUUM INTO as well; a dedicated
        // connection copies without holding the writer lock (a read snapshot, WAL keeps writing).
        let connection = try SQLiteConnection(path: self.path, create: false)
        defer { connection.close() }
        try connection.statement("VACUUM INTO ?1").bind(path).run()
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? nil
        return size ?? 0
    }

    public func schemaVersion() throws -> Int {
        try appliedMigrations().last?.version ?? 0
    }

    public func credentialCountsByStatus() throws -> [CredentialStatus: Int] {
        try withReader { connection in
            let statement = try connection.statement("SELECT status, count(*) FROM credentials GROUP BY status")
            var counts: [CredentialStatus: Int] = [:]
            while try statement.step() {
                if let status = CredentialStatus(rawValue: statement.text(0) ?? "") {
                    counts[status] = Int(statement.int64(1))
                }
            }
            return counts
        }
    }
}
