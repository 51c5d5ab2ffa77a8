/// The credential vault: seals secrets on the way in, opens them on the way out, and keeps
/// every write whole. Composes a `CredentialStore` (ciphertext only) with a `Sealer`.
public final class Vault: Sendable {
    public let store: any CredentialStore
    public let sealer: any Sealer
    public let clock: any VaultClock
    /// The planner for providers without settings of their own.
    public let planner: RefreshPlanner
    /// Per provider instance (lifetime share, margin, jitter, default lifetime).
    public let planners: [String: RefreshPlanner]
    /// Every committed change is published here, for the watch and event streams.
    public let events: ChangeFeed

    public init(
        store: any CredentialStore, sealer: any Sealer, clock: any VaultClock = SystemClock(),
        planner: RefreshPlanner = RefreshPlanner(), planners: [String: RefreshPlanner] = [:],
        events: ChangeFeed = ChangeFeed()
    ) {
        self.store = store
        self.sealer = sealer
        self.clock = clock
        self.planner = planner
        self.planners = planners
        self.events = events
    }

    public func planner(for provider: String) -> RefreshPlanner { planners[provider] ?? planner }

    /// Stores `payload` as credential `id`, replacing any previous tokens (the generation goes
    /// up by one). Durable (`synchronous=FULL`) because a payload may carry a refresh token the
    /// provider will not hand out again.
    @discardableResult
    public func put(
        _ id: CredentialID, payload: TokenPayload, provider: String, labels: [String: String] = [:],
        audit: AuditEvent? = nil
    ) throws -> CredentialMetadata {
        try Self.validate(provider: provider, labels: labels)
        let now = clock.now
        let jitter = Double.random(in: 0..<1)
        let planner = planner(for: provider)
        let metadata = try store.write(durability: .full) { writer in
            let previous = try writer.record(id)?.metadata
            let expiresAt = payload.expiry.resolve(issuedAt: now)
            let metadata = CredentialMetadata(
                id: id, provider: provider, kind: payload.kind, subject: payload.subject, status: .active,
                generation: (previous?.generation ?? 0) + 1, tokenType: payload.tokenType, scopes: payload.scopes,
                labels: labels, issuedAt: now, expiresAt: expiresAt,
                // A credential that cannot be refreshed is acted on at its expiry instead (an
                // EBS verify token is purged, another one marked expired).
                refreshAt: planner.refreshAt(
                    issuedAt: now, expiresAt: expiresAt, refreshIn: payload.refreshIn,
                    canRefresh: payload.secrets.refreshToken != nil, jitter: jitter,
                    refreshTokenExpiresAt: payload.refreshTokenExpiry.resolve(issuedAt: now)) ?? expiresAt,
                refreshTokenExpiresAt: payload.refreshTokenExpiry.resolve(issuedAt: now),
                createdAt: previous?.createdAt ?? now, updatedAt: now,
                hasRefreshToken: payload.secrets.refreshToken != nil, hasIDToken: payload.secrets.idToken != nil)
            try writer.save(try seal(payload.secrets, metadata: metadata, term: sealer.activeTerm))
            if let audit { try writer.appendAudit(audit) }
            return metadata
        }
        events.publish(CredentialEvent(kind: .stored, id: id, at: now, metadata: metadata))
        return metadata
    }

    /// Metadata only; nothing is decrypted.
    public func metadata(_ id: CredentialID) throws -> CredentialMetadata {
        guard let record = try store.record(id) else { throw VaultError.notFound(id) }
        return record.metadata
    }

    /// The credential with its secrets opened: all of them, or only `fields` (the access token
    /// is always opened). Serving a token opens just what it returns, so the refresh token is
    /// not decrypted into memory on every read.
    public func credential(_ id: CredentialID, opening fields: Set<SealedField> = Set(SealedField.allCases)) throws
        -> Credential
    {
        guard let record = try store.record(id) else { throw VaultError.notFound(id) }
        return Credential(metadata: record.metadata, secrets: try open(record, fields: fields))
    }

    /// Like `credential(_:opening:)`, but fails at once instead of waiting when the store is
    /// busy: for a caller on an event loop, which then hands the request to a blocking thread.
    public func credentialWithoutWaiting(_ id: CredentialID, opening fields: Set<SealedField>) throws -> Credential {
        guard let record = try store.recordWithoutWaiting(id) else { throw VaultError.notFound(id) }
        return Credential(metadata: record.metadata, secrets: try open(record, fields: fields))
    }

    public func list(_ query: CredentialQuery) throws -> [CredentialMetadata] {
        try store.list(query)
    }

    /// Removes the credential (local only; provider revocation belongs to the refresh engine).
    public func delete(_ id: CredentialID, audit: AuditEvent? = nil) throws {
        let last = try store.write(durability: .full) { writer -> CredentialMetadata? in
            let last = try writer.record(id)?.metadata
            guard try writer.delete(id) else { throw VaultError.notFound(id) }
            if let audit { try writer.appendAudit(audit) }
            return last
        }
        // The event carries the last state, so watchers know what was deleted.
        events.publish(CredentialEvent(kind: .deleted, id: id, at: clock.now, metadata: last))
    }

    // MARK: Sealing

    /// Seals every secret field of a row under `term`, each bound to (id, generation, field).
    public func seal(_ secrets: CredentialSecrets, metadata: CredentialMetadata, term: UInt32) throws
        -> SealedCredentialRecord
    {
        func sealed(_ value: SecretBytes?, _ field: SealedField) throws -> [UInt8]? {
            guard let value else { return nil }
            return try sealer.seal(
                value, associatedData: field.associatedData(id: metadata.id, generation: metadata.generation),
                term: term)
        }
        return SealedCredentialRecord(
            metadata: metadata, sealTerm: term,
            accessToken: try sealed(secrets.accessToken, .accessToken)!,
            refreshToken: try sealed(secrets.refreshToken, .refreshToken),
            idToken: try sealed(secrets.idToken, .idToken),
            extras: try sealed(secrets.extras, .extras))
    }

    /// Opens the sealed fields of a row (every one unless `fields` says otherwise; the access
    /// token always); any failure names the credential and the field.
    public func open(_ record: SealedCredentialRecord, fields: Set<SealedField> = Set(SealedField.allCases)) throws
        -> CredentialSecrets
    {
        func opened(_ field: SealedField) throws -> SecretBytes? {
            guard field == .accessToken || fields.contains(field), let envelope = record[field] else { return nil }
            let associatedData = field.associatedData(id: record.metadata.id, generation: record.metadata.generation)
            do {
                return try sealer.open(envelope, associatedData: associatedData)
            } catch let error as VaultError {
                throw VaultError(
                    code: error.code,
                    message: "credential \(record.metadata.id), field \(field.rawValue): \(error.message)")
            }
        }
        return CredentialSecrets(
            accessToken: try opened(.accessToken)!, refreshToken: try opened(.refreshToken),
            idToken: try opened(.idToken), extras: try opened(.extras))
    }

    static func validate(provider: String, labels: [String: String]) throws {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-_.")
        guard (1...64).contains(provider.count), provider.allSatisfy(allowed.contains) else {
            throw VaultError.invalidField(
                "provider", "must be 1-64 characters of lower-case letters, digits, '-', '_' and '.'")
        }
        guard labels.count <= 32 else { throw VaultError.invalidField("labels", "at most 32 labels allowed") }
        for (key, value) in labels {
            guard (1...64).contains(key.utf8.count), value.utf8.count <= 256 else {
                throw VaultError.invalidField("labels", "keys must be 1-64 bytes and values at most 256 bytes")
            }
        }
    }
}
