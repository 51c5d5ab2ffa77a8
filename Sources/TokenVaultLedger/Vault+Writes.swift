import TokenVaultCore

/// Writes of whole credentials: put, bulk import, a code exchange's result, delete and purge.
extension Vault {
    /// A credential to store, as `put` and `importCredentials` take it.
    public struct NewCredential: Sendable {
        public var id: CredentialID
        public var payload: TokenPayload
        public var provider: String
        /// The credential's labels; nil keeps those of the credential it replaces (a repair).
        public var labels: [String: String]?
        /// The audit row written in the same transaction (nil: none).
        public var audit: AuditEvent?
        /// When the tokens were issued (relative lifetimes count from here); nil: the moment of
        /// the write. A backend that stores tokens long after receiving them should say.
        public var issuedAt: Timestamp?
        /// The courier's key of the call whose answer this is (received tokens only): recorded
        /// with the write, so a replay of the same answer is recognised (`isAnswerStored`).
        public var answerKey: String?
        /// The planner of the provider table the caller took (a request's, an exchange's slot);
        /// nil: the table in force.
        public var planner: RefreshPlanner?
        /// The grant the tokens were obtained by, which renews them (nil: a person's tokens).
        public var grant: CredentialGrant?

        public init(
            id: CredentialID, payload: TokenPayload, provider: String, labels: [String: String]? = [:],
            audit: AuditEvent? = nil, issuedAt: Timestamp? = nil, answerKey: String? = nil,
            planner: RefreshPlanner? = nil, grant: CredentialGrant? = nil
        ) {
            self.grant = grant
            self.id = id
            self.payload = payload
            self.provider = provider
            self.labels = labels
            self.audit = audit
            self.issuedAt = issuedAt
            self.answerKey = answerKey
            self.planner = planner
        }
    }

    /// Stores `payload` as credential `id`, replacing any previous tokens (the generation goes
    /// up by one), with the `grant` that renews them if they were obtained by one. Durable (`synchronous=FULL`) because a payload may carry a refresh token the
    /// provider will not hand out again; concurrent puts share one commit (group commit).
    @discardableResult
    public func put(
        _ id: CredentialID, payload: TokenPayload, provider: String, labels: [String: String] = [:],
        audit: AuditEvent? = nil, planner: RefreshPlanner? = nil, issuedAt: Timestamp? = nil,
        grant: CredentialGrant? = nil
    ) async throws -> CredentialMetadata {
        let credential = NewCredential(
            id: id, payload: payload, provider: provider, labels: labels, audit: audit, issuedAt: issuedAt,
            planner: planner, grant: grant)
        try Self.validate(labels: labels)
        let written = WrittenRecord()
        let metadata = try await writes.write(.full, insertion(of: credential, now: clock.now, keeping: written))
        retain(written)
        publish(.stored, id, metadata)
        return metadata
    }

    /// Stores many credentials in one transaction at `durability` (fixtures, benchmarks, imports);
    /// each replaces any previous tokens as `put` does.
    @discardableResult
    public func importCredentials(_ credentials: [NewCredential], durability: Durability = .full) async throws
        -> [CredentialMetadata]
    {
        for credential in credentials { try Self.validate(labels: credential.labels ?? [:]) }
        let now = clock.now
        // Written in id order (the reseal's reason), returned in the caller's order.
        let order = credentials.indices.sorted { credentials[$0].id.description < credentials[$1].id.description }
        let bodies = order.map { insertion(of: credentials[$0], now: now) }
        let written = try await writes.write(durability) { writer in
            var written: [CredentialMetadata] = []
            for body in bodies { written.append(try await body(writer)) }
            return written
        }
        var stored = written
        for (position, index) in order.enumerated() { stored[index] = written[position] }
        for metadata in stored { publish(.stored, metadata.id, metadata) }
        return stored
    }

    /// Stores tokens a provider has just issued (a redeemed authorization code): like `put`, but
    /// the tokens exist nowhere else, so a failed commit is held and retried in the background
    /// instead of reported. `.held` says the caller may not see the credential yet.
    /// `whenDurable` is called once the write is committed, at once or after it was held.
    public func storeReceived(
        _ credential: NewCredential, whenDurable: (@Sendable () -> Void)? = nil
    ) async throws -> HeldOrCommitted<CredentialMetadata> {
        try Self.validate(labels: credential.labels ?? [:])
        let id = credential.id
        let written = WrittenRecord()
        let stored: @Sendable (CredentialMetadata) -> Void = { [self] metadata in
            retain(written)
            whenDurable?()
            publish(.stored, id, metadata)
        }
        let result = await commitHolding(
            id, insertion(of: credential, now: clock.now, keeping: written), committed: stored)
        if case .committed(let metadata) = result { stored(metadata) }
        return result
    }

    /// Whether the answer of call `callKey` was stored already: a replay from the spool of an
    /// answer committed before the daemon died must not be applied again.
    public func isAnswerStored(_ callKey: String) async throws -> Bool { try await store.isAnswerStored(callKey) }

    /// Removes the credential (local only; provider revocation belongs to the refresh engine,
    /// which says `revoked` when the provider confirmed it). With `planned`, only if the row
    /// under the lock is still the one `planned` was read as (`isSameState`): the engine's
    /// removal of a credential whose revocation it retried from a row that may be behind another
    /// node's delete and store again must not remove the new one. False when it was not removed
    /// for that reason.
    @discardableResult
    public func delete(
        _ id: CredentialID, audit: AuditEvent? = nil, revoked: Bool = false, ifStill planned: CredentialMetadata? = nil
    ) async throws -> Bool {
        let appendAudit = auditAppender
        let announcer = announcer
        let (deleted, last) = try await writes.write(.full) { writer -> (Bool, CredentialMetadata?) in
            let last = try await writer.record(id)?.metadata
            if let planned {
                guard let last, Self.isSameState(last, as: planned) else { return (false, last) }
            }
            guard try await writer.delete(id) else { throw VaultError.notFound(id) }
            if let audit { try await appendAudit([audit], writer) }
            try await announcer.deleted(last, revoked: revoked, id: id, writer)
            return (true, last)
        }
        // The event carries the last state, so watchers know what was deleted.
        if deleted { publish(.deleted, id, last) }
        return deleted
    }

    /// Deletes a credential that cannot be refreshed once it has expired (an EBS verify token),
    /// if it is still that generation and still expired at `now`; false when it changed meanwhile.
    public func purge(_ id: CredentialID, generation: Int64, now: Timestamp, audit: AuditEvent?) async throws -> Bool {
        let appendAudit = auditAppender
        let announcer = announcer
        let last = try await writes.write(.full) { writer -> CredentialMetadata? in
            guard let last = try await writer.record(id)?.metadata, last.generation == generation,
                let expiresAt = last.expiresAt, expiresAt <= now
            else { return nil }
            _ = try await writer.delete(id)
            if let audit { try await appendAudit([audit], writer) }
            try await announcer.deleted(last, revoked: false, id: id, writer)
            return last
        }
        guard let last else { return false }
        publish(.deleted, id, last)
        return true
    }

    /// The write of one new credential: next generation from the stored one, sealed under the
    /// term active in this transaction, with its audit row.
    private func insertion(
        of credential: NewCredential, now: Timestamp, keeping written: WrittenRecord? = nil
    )
        -> @Sendable (any CredentialWriter) async throws
        -> CredentialMetadata
    {
        let planner = credential.planner ?? planner(for: credential.provider)
        let jitter = Double.random(in: 0..<1)
        let appendAudit = auditAppender
        let announcer = announcer
        return { [self] writer in
            written?.keep(nil)  // a held commit's earlier try that saved a row and then failed
            let previous = try await writer.record(credential.id)?.metadata
            let next = NextGeneration(
                previous: previous, payload: credential.payload,
                succession: .replacement(
                    provider: credential.provider, labels: credential.labels ?? previous?.labels ?? [:],
                    grant: credential.grant),
                id: credential.id, issuedAt: credential.issuedAt ?? now, now: now, planner: planner, jitter: jitter)
            let record = try seal(next.secrets, metadata: next.metadata, term: try await writer.activeTerm())
            try await writer.save(record)
            written?.keep(record)
            if let key = credential.answerKey {
                try await writer.recordReceivedAnswer(key, credentialID: credential.id, at: now)
            }
            if let audit = credential.audit { try await appendAudit([audit], writer) }
            try await announcer.newTokens(previous: previous, after: next.metadata, writer)
            return next.metadata
        }
    }

    /// Keeps a committed row on this node's disk for a while (`AnswerRetention`).
    func retain(_ written: WrittenRecord) {
        guard let retention, let record = written.value else { return }
        retention.retain(record)
    }

    /// Labels' limits: the ledger checks them on every write, and the API as soon as it reads them.
    public static func validate(labels: [String: String]) throws {
        guard labels.count <= 32 else { throw VaultError.invalidField("labels", "at most 32 labels allowed") }
        for (key, value) in labels {
            guard (1...64).contains(key.utf8.count), value.utf8.count <= 256 else {
                throw VaultError.invalidField("labels", "keys must be 1-64 bytes and values at most 256 bytes")
            }
            // They are printed by the CLI and logged: no terminal escapes, no forged log lines.
            guard !(key + value).unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
            else {
                throw VaultError.invalidField("labels", "keys and values must not contain control characters")
            }
        }
    }
}
