/// `/v1/admin`: audit log, key rotation and backups. Each needs the `admin` permission
/// (the daemon's own uid and root have it).
extension TokenVaultClient {
    /// `GET /v1/admin/audit`: one page of audit rows, newest first unless `oldestFirst`.
    ///
    /// - Parameter credential: Only rows naming this credential id (`namespace/name`).
    /// - Parameter oldestFirst: Oldest first, the cursor walking forward (to follow new rows).
    public func auditEvents(
        cursor: String? = nil, limit: Int? = nil, credential: String? = nil, oldestFirst: Bool = false
    ) async throws -> AuditPage {
        try await send(
            .get, "/v1/admin/audit",
            query: [
                ("cursor", cursor), ("limit", limit.map(String.init)), ("credential", credential),
                ("order", oldestFirst ? "oldest" : nil),
            ]
        ).decode(AuditPage.self)
    }

    /// `POST /v1/admin/rotate-key`: re-seals every credential under a new data key term.
    /// Answers when the rotation has finished, which for a large vault takes longer than an
    /// ordinary request: `timeout` overrides the client's for this call.
    public func rotateKey(timeout: Duration? = nil) async throws -> RotateKeyResult {
        try await send(.post, "/v1/admin/rotate-key", timeout: timeout).decode(RotateKeyResult.self)
    }

    /// `POST /v1/admin/backup`: writes a consistent copy of the database (ciphertext only)
    /// into the data directory's `backups/` folder.
    /// `timeout` overrides the client's for this call (copying a large database takes a while).
    public func backup(timeout: Duration? = nil) async throws -> BackupResult {
        try await send(.post, "/v1/admin/backup", timeout: timeout).decode(BackupResult.self)
    }

    /// `GET /v1/admin/status`: health, credentials by status, the next scheduled refresh and
    /// the audit trail's size.
    public func status() async throws -> DaemonStatus {
        try await send(.get, "/v1/admin/status").decode(DaemonStatus.self)
    }

    /// `GET /v1/admin/providers/{provider}`: the instance `name` as the daemon uses it (an `oauth2`
    /// instance reads its server's metadata now if it has not yet).
    public func provider(_ name: String) async throws -> ProviderDetails {
        try await send(.get, "/v1/admin/providers/" + Self.percentEncoded(name)).decode(ProviderDetails.self)
    }

    /// `GET /v1/admin/providers/{provider}/jwks`: the public JWK Set of instance `name`'s client
    /// key, to register at its server for `private_key_jwt`.
    public func providerKeys(_ name: String) async throws -> ProviderDetails.KeySet {
        try await send(.get, "/v1/admin/providers/" + Self.percentEncoded(name) + "/jwks")
            .decode(ProviderDetails.KeySet.self)
    }
}
