/// Storage operations for operators: consistent backups, schema facts. (The audit trail is the
/// ledger's: `Vault` writes, chains and reads it.)
public protocol AdminStore: Sendable {
    /// Writes a consistent copy of the database (ciphertext only) to `path`; returns its size.
    func backup(to path: String) async throws -> Int64
    /// The newest applied migration's version.
    func schemaVersion() async throws -> Int
    /// How many credentials are in each status (for metrics).
    func credentialCountsByStatus() async throws -> [CredentialStatus: Int]
    /// Rows in the audit trail (for `tokenvault status`).
    func auditRowCount() async throws -> Int
    /// Webhook deliveries in the outbox by state: `pending` (the backlog) and `failed` (dead
    /// letters), for metrics.
    func webhookBacklog() async throws -> [String: Int]
}
