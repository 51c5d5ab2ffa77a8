import TokenVaultCore

/// The refresh engine's writes: journal an attempt, commit its answer, close it failed, and
/// change a credential's schedule or state. The engine decides; the ledger writes.
extension Vault {
    /// What journalling an attempt needs: the credential as read, the fingerprint of the refresh
    /// token about to be presented, and the lease to take.
    public struct AttemptRequest: Sendable {
        public var metadata: CredentialMetadata
        public var fingerprint: String
        public var owner: String
        public var leaseUntil: Timestamp
        /// Whether a lease owner other than `owner` is known to be gone (`LeaseDecision`). Asked
        /// inside the journalling transaction; `currentBeat` reads the owner's node's beat
        /// counter there (nil: no row), so a takeover sees a beat made since it last looked.
        public var isOwnerGone:
            @Sendable (_ owner: String, _ currentBeat: () async throws -> Int64?) async throws -> Bool
        /// Only resume the open attempt for this generation and refresh token; start, supersede
        /// or replace nothing (a resumption: `RefreshReason.resumption`). Nil when there is none.
        public var resumeOnly = false

        public init(
            metadata: CredentialMetadata, fingerprint: String, owner: String, leaseUntil: Timestamp,
            isOwnerGone:
                @escaping @Sendable (_ owner: String, _ currentBeat: () async throws -> Int64?) async throws
                -> Bool
        ) {
            self.metadata = metadata
            self.fingerprint = fingerprint
            self.owner = owner
            self.leaseUntil = leaseUntil
            self.isOwnerGone = isOwnerGone
        }
    }

    /// Journals `attempt`; false when another process journalled one for the credential after
    /// this transaction looked (a node sharing the database): its lease, not an error.
    private static func begin(_ attempt: RefreshAttempt, _ writer: any CredentialWriter) async throws -> Bool {
        do {
            try await writer.beginAttempt(attempt)
            return true
        } catch let error as VaultError where error.code == .conflict {
            return false
        }
    }

    /// Journals the attempt durably (or resumes the open one whose holder is gone, when it
    /// presented the same refresh token) and moves `refresh_at` to the lease's end, so that if
    /// this process dies the scheduler comes back then. Nil when another live process holds the
    /// lease, or the credential is no longer at `request.metadata`'s generation. `resumedFrom` is
    /// the previous holder of a resumed attempt. Must commit before the provider is called.
    public func beginAttempt(_ request: AttemptRequest) async throws -> (RefreshAttempt, resumedFrom: String?)? {
        let now = clock.now
        let metadata = request.metadata
        let attemptID = Self.randomID()
        let failover = failover
        let started = try await writes.write(.full, claiming: [metadata.id]) {
            writer -> (RefreshAttempt, resumedFrom: String?)? in
            // After a failover no refresh token is presented until every node re-applied the
            // commits the database lost: the row may hold a token the provider has spent.
            if let refusal = try await failover.refusal(in: writer) { throw refusal }
            // The row as it is now (on a shared database, under the credential's lock): a refresh
            // planned from an older read, the credential refreshed since by another process, is
            // not started; its refresh token is spent. A credential another node is writing
            // right now is skipped, not waited for (FOR UPDATE SKIP LOCKED, in effect).
            let current: SealedCredentialRecord?
            do {
                current = try await writer.recordUnlessBusy(metadata.id)
            } catch let error as VaultError where error.code == .conflict {
                return nil
            }
            guard let current, Self.isSameState(current.metadata, as: metadata) else { return nil }
            var attempt = RefreshAttempt(
                attemptID: attemptID, credentialID: metadata.id, generation: metadata.generation,
                refreshTokenFingerprint: request.fingerprint, leaseOwner: request.owner,
                leaseExpiresAt: request.leaseUntil, startedAt: now)
            var resumedFrom: String?
            let decision = try await LeaseDecision.decide(
                existing: try writer.openAttempt(for: metadata.id), generation: metadata.generation,
                owner: request.owner
            ) { holder in
                try await request.isOwnerGone(holder) { try await writer.nodeBeat(LeaseName.node(of: holder)) }
            }
            if request.resumeOnly {
                guard case .resume(let old) = decision, old.refreshTokenFingerprint == request.fingerprint else {
                    return nil
                }
            }
            switch decision
            {
            case .busy:
                return nil
            case .start:
                guard try await Self.begin(attempt, writer) else { return nil }
            case .supersede(let old):
                try await writer.finishAttempt(
                    attemptID: old.attemptID, state: .abandoned, outcome: "superseded", at: now)
                guard try await Self.begin(attempt, writer) else { return nil }
            case .resume(let old) where old.refreshTokenFingerprint == request.fingerprint:
                try await writer.renewLease(attemptID: old.attemptID, owner: request.owner, until: request.leaseUntil)
                attempt = old
                attempt.leaseOwner = request.owner
                attempt.leaseExpiresAt = request.leaseUntil
                resumedFrom = old.leaseOwner
            case .resume(let old):
                try await writer.finishAttempt(
                    attemptID: old.attemptID, state: .abandoned, outcome: "refresh token changed", at: now)
                try await writer.beginAttempt(attempt)
            }
            var schedule = ScheduleUpdate(current.metadata)
            schedule.refreshAt = request.leaseUntil
            _ = try await writer.updateSchedule(schedule)
            return (attempt, resumedFrom)
        }
        if let (attempt, _) = started, failover.isArmed { journalled.add(attempt) }
        return started
    }

    /// Whether the row under the lock is the one a refresh was planned from, which may have been
    /// read from a cache behind another node's change: the same generation of the same
    /// credential (a generation starts again at 1 when a credential is deleted and stored again,
    /// with a new `createdAt`) in the same status (another node may have marked it for deletion
    /// or re-authorisation without a new generation). Otherwise the refresh is not started.
    static func isSameState(_ current: CredentialMetadata, as planned: CredentialMetadata) -> Bool {
        current.generation == planned.generation && current.createdAt == planned.createdAt
            && current.status == planned.status
    }

    /// A provider's answer to a journalled refresh, to be committed.
    public struct ReceivedRefresh: Sendable {
        public var attempt: RefreshAttempt
        /// The generation the refresh started from, and its opened secrets (what the answer
        /// leaves out is kept from them).
        public var previous: CredentialMetadata
        public var previousSecrets: CredentialSecrets
        public var payload: TokenPayload
        /// When the request was sent: the new tokens' lifetimes count from here.
        public var sentAt: Timestamp
        /// Called once the answer's fate is durable (committed, or found superseded), whether at
        /// once or after the commit was held: the courier may forget its copy then.
        public var whenDurable: (@Sendable () -> Void)?
        /// The planner of the provider table the refresh took its provider from (the engine's
        /// slot), so that the answer is planned by the instance that gave it even if a reload put
        /// another table in force meanwhile; nil: the table in force.
        public var planner: RefreshPlanner?

        public init(
            attempt: RefreshAttempt, previous: CredentialMetadata, previousSecrets: CredentialSecrets,
            payload: TokenPayload, sentAt: Timestamp, planner: RefreshPlanner? = nil,
            whenDurable: (@Sendable () -> Void)? = nil
        ) {
            self.attempt = attempt
            self.previous = previous
            self.previousSecrets = previousSecrets
            self.payload = payload
            self.sentAt = sentAt
            self.planner = planner
            self.whenDurable = whenDurable
        }
    }

    /// How a refresh commit ended.
    public enum RefreshCommit: Sendable, Equatable {
        /// The new generation is durable and published.
        case committed(CredentialMetadata)
        /// Nothing written: the credential was replaced or deleted meanwhile (a `PUT` or a delete
        /// wins over a refresh). The text says which; `gone`: no row has its id now, so the tokens
        /// received are nobody's and the engine revokes them.
        case superseded(String, gone: Bool)
        /// Nothing written: another node took the attempt over (it watched this node's heartbeat
        /// stand still for a lease period, or an operator forgot this node), so these tokens
        /// came from a refresh token that node presents again. Recorded on the credential
        /// (`lease_taken_over`) and reported to the observer: never dropped silently.
        case leaseLost(String)
    }

    /// The `last_error` code of a credential whose provider answer was held by a node that lost
    /// its lease (`RefreshCommit.leaseLost`).
    public static let leaseTakenOverCode = "lease_taken_over"

    /// Stores the new tokens, generation + 1 and the attempt's close in one FULL transaction,
    /// fenced: only if the credential still has the attempt's generation and the attempt is still
    /// open under its owner. The term is read inside the transaction. If the database refuses
    /// the write, the answer is held and committed later (`.held`); it is never dropped.
    public func commitRefresh(_ received: ReceivedRefresh) async -> HeldOrCommitted<RefreshCommit> {
        let planner = received.planner ?? planner(for: received.previous.provider)
        let jitter = Double.random(in: 0..<1)
        let id = received.previous.id
        let announcer = announcer
        let written = WrittenRecord()
        let body: @Sendable (any CredentialWriter) async throws -> RefreshCommit = { [self] writer in
            written.keep(nil)  // a held commit's earlier try that saved a row and then failed
            let now = clock.now
            let attempt = received.attempt
            // The credential the refresh started from: the same generation of the same row (one
            // deleted and stored again starts at generation 1 again, with a new `createdAt`).
            let current = try await writer.record(id)
            // A row older than the one the refresh started from: the database lost commits (a
            // failover). Held until every node re-applied what it keeps, then stored over it.
            let behind =
                current.map {
                    $0.metadata.createdAt == received.previous.createdAt && $0.metadata.generation < attempt.generation
                } ?? false
            if behind, let refusal = try await failover.refusal(in: writer) { throw refusal }
            guard let current, behind || current.metadata.generation == attempt.generation,
                current.metadata.createdAt == received.previous.createdAt
            else {
                try await writer.finishAttempt(
                    attemptID: attempt.attemptID, state: .abandoned, outcome: "credential replaced", at: now)
                let why =
                    current == nil
                    ? "deleted"
                    : current?.metadata.createdAt != received.previous.createdAt
                        ? "deleted and stored again" : "replaced"
                return .superseded("credential \(id) was \(why) while it was being refreshed", gone: current == nil)
            }
            let closed = try await writer.closeSucceededAttempt(attemptID: attempt.attemptID, owner: attempt.leaseOwner)
            // An attempt the journal does not know at all was lost with the database's commits,
            // not taken over (a taker's attempt is the same row): the answer is stored once the
            // failover is reconciled.
            var forgotten = false
            if !closed { forgotten = try await !writer.isAttemptRecorded(attempt.attemptID) }
            if forgotten, let refusal = try await failover.refusal(in: writer) { throw refusal }
            guard closed || forgotten else {
                let why =
                    "this node received new tokens for \(id) (attempt \(attempt.attemptID)) but another node took "
                    + "the attempt over; the provider has probably revoked the grant"
                // The status stays (the taker's own outcome decides it); the reason is this.
                var update = ScheduleUpdate(current.metadata)
                update.lastError = CredentialFailure(code: Self.leaseTakenOverCode, message: why, at: now)
                update.updatedAt = now
                _ = try await writer.updateSchedule(update)
                return .leaseLost(why)
            }
            var next = NextGeneration(
                previous: behind ? received.previous : current.metadata, previousSecrets: received.previousSecrets,
                payload: received.payload, succession: .refresh, id: id, issuedAt: received.sentAt, now: now,
                planner: planner, jitter: jitter)
            if current.metadata.status == .revokePending {
                // Removed while it was being refreshed (on another node): the new tokens are kept
                // so that the removal's next try revokes them, at the time it set.
                next.metadata.status = .revokePending
                next.metadata.refreshAt = current.metadata.refreshAt
                next.metadata.lastError = current.metadata.lastError
                next.metadata.refreshFailures = current.metadata.refreshFailures
            }
            let record = try seal(next.secrets, metadata: next.metadata, term: try await writer.activeTerm())
            try await writer.save(record)
            if next.metadata.status == .needsReauth, current.metadata.status != .needsReauth {
                // The answer's id token named another account (`NextGeneration`): announced as
                // what it is, not as a recovery.
                try await announcer.changed(from: current.metadata, to: next.metadata, writer)
            } else {
                try await announcer.newTokens(previous: current.metadata, after: next.metadata, writer)
            }
            written.keep(record)
            return .committed(next.metadata)
        }
        let settled: @Sendable (RefreshCommit) -> Void = { [self] commit in
            retain(written)
            journalled.remove(received.attempt.attemptID)
            received.whenDurable?()
            switch commit {
            case .committed(let metadata):
                publish(metadata.status == .needsReauth ? .needsReauth : .refreshed, id, metadata)
            case .leaseLost(let why): observer?.answerLost(id, attempt: received.attempt, why: why)
            case .superseded: break
            }
        }
        let result = await commitHolding(id, body, committed: settled)
        if case .committed(let commit) = result { settled(commit) }
        return result
    }

    /// Closes a failed attempt (if one was journalled) and records the failure's decision on the
    /// credential without touching its tokens: the next try presents the same refresh token.
    /// Returns the credential afterwards, or nil if it changed generation or disappeared.
    public func recordFailure(
        attempt: RefreshAttempt?, outcome: String, update: ScheduleUpdate, event: CredentialEvent.Kind?
    ) async throws -> CredentialMetadata? {
        let now = clock.now
        let change = scheduleChange(update, announcing: [])
        defer { if let attempt { journalled.remove(attempt.attemptID) } }
        let updated = try await writes.write(.normal, claiming: [update.id]) {
            writer -> CredentialMetadata? in
            if let attempt {
                try await writer.finishAttempt(attemptID: attempt.attemptID, state: .failed, outcome: outcome, at: now)
            }
            return try await change(writer)
        }
        if let event, let updated { publish(event, update.id, updated) }
        return updated
    }

    /// Changes a credential's schedule and state (not its secrets), if it still has
    /// `update.generation`; publishes `event` when given, and announces `announcing` to the
    /// webhooks besides what the change of status announces. Nil when it changed meanwhile.
    @discardableResult
    public func updateSchedule(
        _ update: ScheduleUpdate, event: CredentialEvent.Kind? = nil, announcing: [WebhookEvent.Kind] = []
    ) async throws -> CredentialMetadata? {
        let change = scheduleChange(update, announcing: announcing)
        let updated = try await writes.write(.normal, claiming: [update.id]) { writer in try await change(writer) }
        if let event, let updated { publish(event, update.id, updated) }
        return updated
    }

    /// The write of a schedule change: the row after it (nil: it changed meanwhile), announced.
    private func scheduleChange(_ update: ScheduleUpdate, announcing: [WebhookEvent.Kind])
        -> @Sendable (any CredentialWriter) async throws -> CredentialMetadata?
    {
        let announcer = announcer
        return { writer in
            // Read only when something may be announced: the group commit serves it from its claims.
            let previous = await announcer.isActive ? try writer.record(update.id)?.metadata : nil
            guard try await writer.updateSchedule(update), let after = try await writer.record(update.id)?.metadata
            else {
                return nil
            }
            try await announcer.changed(from: previous, to: after, explicit: announcing, writer)
            return after
        }
    }

    /// 128 random bits as 32 hex digits: attempt ids, webhook message ids.
    static func randomID() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        func hex(_ value: UInt64) -> String {
            let text = String(value, radix: 16)
            return String(repeating: "0", count: 16 - text.count) + text
        }
        return hex(high) + hex(low)
    }
}

extension ScheduleUpdate {
    /// The credential's current schedule and state, to be changed field by field; applied only
    /// while the row has the generation and status read (`expectedStatus`).
    public init(_ metadata: CredentialMetadata) {
        self.init(
            id: metadata.id, generation: metadata.generation, expectedStatus: metadata.status,
            status: metadata.status, refreshAt: metadata.refreshAt, lastError: metadata.lastError,
            refreshFailures: metadata.refreshFailures, updatedAt: metadata.updatedAt)
    }
}
