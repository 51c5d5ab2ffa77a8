import Foundation
import TokenVaultCore

extension SQLiteDatabase: AdminStore {
    /// `VACUUM INTO`: a consistent, compacted copy taken while reads and writes continue.
    public func backup(to path: String) async throws -> Int64 {
        try await threads.run { [self] in
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
    }

    /// The newest migration applied, read on a reader connection: health asks for it, and the
    /// writer is the ledger's (a caller without rights must not be able to hold it up).
    public func schemaVersion() async throws -> Int {
        try await threads.run { [self] in
            try withReader { try migrator.applied($0).keys.max() ?? 0 }
        }
    }

    public func auditRowCount() async throws -> Int {
        try await threads.run { [self] in
            try withReader { connection in
                let statement = try connection.statement("SELECT count(*) FROM audit_events")
                // A statement left on a row keeps its read transaction, and the pooled connection
                // would go on reading that snapshot.
                defer { statement.reset() }
                return try statement.step() ? Int(statement.int64(0)) : 0
            }
        }
    }

    public func credentialCountsByStatus() async throws -> [CredentialStatus: Int] {
        try await threads.run { [self] in
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

    public func webhookBacklog() async throws -> [String: Int] {
        try await threads.run { [self] in
            try withReader { connection in
                let statement = try connection.statement(
                    "SELECT state, count(*) FROM webhook_deliveries GROUP BY state")
                var counts: [String: Int] = [:]
                while try statement.step() { counts[statement.text(0) ?? ""] = Int(statement.int64(1)) }
                return counts
            }
        }
    }
}
