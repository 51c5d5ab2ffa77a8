import Foundation
import Logging
import TokenVaultCore

extension RefreshEngine {
    /// One refresh of one credential, start to finish. Runs under the credential's single
    /// flight. Storage errors end as `.skipped` with the reason logged; provider failures are
    /// recorded on the credential.
    func perform(_ id: CredentialID, _ reason: RefreshReason) async -> RefreshOutcome {
        do {
            return try await performRefresh(id, reason)
        } catch {
            statistics.record { $0.skipped += 1 }
            logger.error(
                "refresh could not run",
                metadata: ["tokenvault.credential.id": "\(id)", "tokenvault.error": "\(error)"])
            return .skipped("the refresh could not run: \(error)", nil)
        }
    }

    private func performRefresh(_ id: CredentialID, _ reason: RefreshReason) async throws -> RefreshOutcome {
        guard let record = try await blocking({ [vault] in try vault.store.record(id) }) else {
            return .skipped("credential \(id) does not exist", nil)
        }
        let metadata = record.metadata
        let now = vault.clock.now
        if metadata.status == .revokePending {
            guard reason == .scheduled || reason == .recovery else {
                return .skipped("credential \(id) is being deleted", metadata)
            }
            return try await retryRevocation(record)
        }
        if let skip = try await reasonNotToRefresh(metadata, reason: reason, now: now) { return skip }

        guard let provider = providers[metadata.provider], let gate = gates[metadata.provider] else {
            let failure = ProviderFailure.notConfigured(metadata.provider)
            return try await recordFailure(failure, metadata: metadata, attempt: nil, resumingLostAnswer: false)
        }
        if let until = gate.admit(now: now) {
            return try await postpone(metadata, until: until, reason: reason, gate: gate)
        }
        await gate.acquire()
        defer { gate.release() }
        return try await refresh(record, reason: reason, provider: provider, gate: gate)
    }

    /// Why a credential is not refreshed now, if it is not; also retires one whose refresh
    /// token has expired.
    private func reasonNotToRefresh(_ metadata: CredentialMetadata, reason: RefreshReason, now: Timestamp)
        async throws -> RefreshOutcome?
    {
        switch metadata.status {
        case .needsReauth:
            return .skipped("credential \(metadata.id) needs re-authorisation", metadata)
        case .expired:
            return .skipped("credential \(metadata.id) has expired", metadata)
        case .active, .failing, .revokePending:
            break
        }
        guard metadata.kind == .oauth2, metadata.hasRefreshToken else {
            return try await retireIfExpired(metadata, now: now)
        }
        if let refreshTokenExpiry = metadata.refreshTokenExpiresAt, refreshTokenExpiry <= now {
            let update = ScheduleUpdate(
                id: metadata.id, generation: metadata.generation, status: .expired, refreshAt: nil,
                lastError: CredentialFailure(
                    code: "refresh_token_expired", message: "the refresh token expired at \(refreshTokenExpiry)",
                    at: now), refreshFailures: metadata.refreshFailures, updatedAt: now)
            let updated = try await applySchedule(update)
            if let updated { publish(.expired, metadata.id, updated) }
            return .skipped("the refresh token of \(metadata.id) has expired", updated ?? metadata)
        }
        if reason == .scheduled, let refreshAt = metadata.refreshAt, refreshAt > now {
            return .skipped("credential \(metadata.id) is not due until \(refreshAt)", metadata)
        }
        // Token reads in a loop must not defeat the backoff of a failing credential.
        if reason == .onDemand, metadata.status == .failing, let refreshAt = metadata.refreshAt, refreshAt > now {
            let error = metadata.lastError.map { "\($0.code): \($0.message)" } ?? "unknown"
            return .skipped("refreshes of \(metadata.id) are failing (\(error)); next try at \(refreshAt)", metadata)
        }
        return nil
    }

    /// A credential that cannot be refreshed, at its expiry: an EBS verify token is purged
    /// (audited, `deleted` event); any other is marked `expired` and left for a new sign-in.
    private func retireIfExpired(_ metadata: CredentialMetadata, now: Timestamp) async throws -> RefreshOutcome {
        guard let expiresAt = metadata.expiresAt, expiresAt <= now else {
            if let refreshAt = metadata.refreshAt, refreshAt <= now {
                var update = ScheduleUpdate(metadata)
                update.refreshAt = metadata.expiresAt
                _ = try await applySchedule(update)
            }
            return .skipped("credential \(metadata.id) cannot be refreshed", metadata)
        }
        if metadata.kind == .verifyToken {
            let audit = systemAudit(
                metadata.id, operation: "credential.purge", detail: "verify token expired at \(expiresAt)")
            try await blocking { [vault] in try vault.delete(metadata.id, audit: audit) }
            logger.info("expired verify token purged", metadata: ["tokenvault.credential.id": "\(metadata.id)"])
            return .skipped("credential \(metadata.id) expired and was purged", nil)
        }
        var update = ScheduleUpdate(metadata)
        update.status = .expired
        update.refreshAt = nil
        update.lastError = CredentialFailure(
            code: "expired", message: "the access token expired at \(expiresAt) and there is no refresh token", at: now)
        update.updatedAt = now
        let updated = try await applySchedule(update)
        if let updated { publish(.expired, metadata.id, updated) }
        return .skipped("credential \(metadata.id) expired without a refresh token", updated ?? metadata)
    }

    /// The provider is paused: come back when it reopens, spread out so that the credentials
    /// do not all return at once.
    private func postpone(_ metadata: CredentialMetadata, until: Timestamp, reason: RefreshReason, gate: ProviderGate)
        async throws -> RefreshOutcome
    {
        statistics.record { $0.skipped += 1 }
        if reason == .scheduled || reason == .recovery {
            let spread = max(1, gate.limits.breakerCooldown / 2) * Double.random(in: 0..<1)
            var update = ScheduleUpdate(metadata)
            update.refreshAt = until.adding(seconds: spread)
            _ = try await applySchedule(update)
        }
        return .skipped("provider \(metadata.provider) is paused until \(until)", metadata)
    }

    private func refresh(
        _ record: SealedCredentialRecord, reason: RefreshReason, provider: any TokenProvider, gate: ProviderGate
    ) async throws -> RefreshOutcome {
        let metadata = record.metadata
        let id = metadata.id
        let secrets = try vault.open(record, fields: [.refreshToken, .idToken, .extras])
        guard let refreshToken = secrets.refreshToken else {
            return .skipped("credential \(id) has no refresh token", metadata)
        }
        let clock = ContinuousClock()
        var timings = RefreshTimings()
        let journalStart = clock.now
        let journalled = try await journal(metadata, fingerprint: vault.sealer.fingerprint(refreshToken))
        timings.journal = clock.now - journalStart
        guard let (attempt, resumed) = journalled else {
            statistics.record { $0.skipped += 1 }
            return .skipped("another process holds the refresh lease of \(id)", metadata)
        }
        if resumed {
            statistics.record { $0.recovered += 1 }
            logger.notice(
                "resuming an interrupted refresh with the same refresh token",
                metadata: ["tokenvault.credential.id": "\(id)", "tokenvault.attempt.id": "\(attempt.attemptID)"])
        }
        let resumingLostAnswer =
            resumed || metadata.lastError.map { ProviderFailure.lostAnswerCodes.contains($0.code) } ?? false

        let sentAt = vault.clock.now
        let httpStart = clock.now
        let payload: TokenPayload
        do {
            payload = try await provider.refresh(
                RefreshRequest(credentialID: id, refreshToken: refreshToken, scopes: metadata.scopes))
        } catch {
            gate.record(error, now: vault.clock.now)
            return try await recordFailure(
                error, metadata: metadata, attempt: attempt, resumingLostAnswer: resumingLostAnswer)
        }
        gate.recordSuccess()
        timings.http = clock.now - httpStart
        let commitStart = clock.now
        let committed = try await commit(
            payload, sentAt: sentAt, previous: secrets, metadata: metadata, attempt: attempt)
        timings.commit = clock.now - commitStart
        guard let (refreshed, sealTime) = committed else {
            statistics.record { $0.skipped += 1 }
            return .skipped("credential \(id) was replaced while it was being refreshed", nil)
        }
        statistics.record { $0.refreshed += 1 }
        timings.seal = sealTime
        timings.commit -= sealTime
        options.timings?(timings)
        publish(.refreshed, id, refreshed)
        logger.debug(
            "credential refreshed",
            metadata: [
                "tokenvault.credential.id": "\(id)", "tokenvault.credential.generation": "\(refreshed.generation)",
                "tokenvault.refresh.reason": "\(reason.rawValue)",
            ])
        return .refreshed(refreshed)
    }

    /// Journals the attempt durably (or resumes the open one) and moves `refresh_at` to the
    /// lease's end, so that if this process dies the scheduler comes back then. Nil when
    /// another live process holds the lease.
    private func journal(_ metadata: CredentialMetadata, fingerprint: String) async throws -> (
        RefreshAttempt, resumed: Bool
    )? {
        let now = vault.clock.now
        let leaseUntil = now.adding(seconds: options.leaseDuration)
        let owner = owner
        return try await writes.write(.full) { writer -> (RefreshAttempt, resumed: Bool)? in
            var attempt = RefreshAttempt(
                attemptID: UUID().uuidString.lowercased(), credentialID: metadata.id, generation: metadata.generation,
                refreshTokenFingerprint: fingerprint, leaseOwner: owner.id, leaseExpiresAt: leaseUntil,
                startedAt: now)
            var resumed = false
            switch LeaseDecision.decide(
                existing: try writer.openAttempt(for: metadata.id), generation: metadata.generation, owner: owner.id,
                now: now, isOwnerGone: owner.isGone)
            {
            case .busy:
                return nil
            case .start:
                try writer.beginAttempt(attempt)
            case .supersede(let old):
                try writer.finishAttempt(
                    attemptID: old.attemptID, state: .abandoned, outcome: "superseded", at: now)
                try writer.beginAttempt(attempt)
            case .resume(let old) where old.refreshTokenFingerprint == fingerprint:
                try writer.renewLease(attemptID: old.attemptID, owner: owner.id, until: leaseUntil)
                attempt = old
                attempt.leaseOwner = owner.id
                attempt.leaseExpiresAt = leaseUntil
                resumed = true
            case .resume(let old):
                try writer.finishAttempt(
                    attemptID: old.attemptID, state: .abandoned, outcome: "refresh token changed", at: now)
                try writer.beginAttempt(attempt)
            }
            var schedule = ScheduleUpdate(metadata)
            schedule.refreshAt = leaseUntil
            _ = try writer.updateSchedule(schedule)
            return (attempt, resumed)
        }
    }

    /// Stores the new tokens, generation + 1 and the attempt's close in one FULL commit. A
    /// response without a refresh token keeps the old one; without an id token, the old one.
    private func commit(
        _ payload: TokenPayload, sentAt: Timestamp, previous: CredentialSecrets, metadata: CredentialMetadata,
        attempt: RefreshAttempt
    ) async throws -> (CredentialMetadata, seal: Duration)? {
        let planner = vault.planner(for: metadata.provider)
        let jitter = Double.random(in: 0..<1)
        let vault = vault
        return try await writes.write(.full) { writer -> (CredentialMetadata, seal: Duration)? in
            let now = vault.clock.now
            guard let current = try writer.record(metadata.id), current.metadata.generation == metadata.generation
            else {
                try writer.finishAttempt(
                    attemptID: attempt.attemptID, state: .abandoned, outcome: "credential replaced", at: now)
                return nil
            }
            let secrets = CredentialSecrets(
                accessToken: payload.secrets.accessToken,
                refreshToken: payload.secrets.refreshToken ?? previous.refreshToken,
                idToken: payload.secrets.idToken ?? previous.idToken, extras: payload.secrets.extras ?? previous.extras)
            var next = current.metadata
            next.generation += 1
            next.status = .active
            next.tokenType = payload.tokenType ?? next.tokenType
            if !payload.scopes.isEmpty { next.scopes = payload.scopes }
            next.subject = payload.subject ?? next.subject
            next.issuedAt = sentAt
            next.expiresAt = payload.expiry.resolve(issuedAt: sentAt)
            if payload.secrets.refreshToken != nil {
                next.refreshTokenExpiresAt = payload.refreshTokenExpiry.resolve(issuedAt: sentAt)
            }
            next.refreshAt = planner.refreshAt(
                issuedAt: sentAt, expiresAt: next.expiresAt, refreshIn: payload.refreshIn, canRefresh: true,
                jitter: jitter, refreshTokenExpiresAt: next.refreshTokenExpiresAt)
            next.lastError = nil
            next.refreshFailures = 0
            next.updatedAt = now
            next.hasRefreshToken = secrets.refreshToken != nil
            next.hasIDToken = secrets.idToken != nil
            let sealStart = ContinuousClock.now
            let sealed = try vault.seal(secrets, metadata: next, term: vault.sealer.activeTerm)
            let sealTime = ContinuousClock.now - sealStart
            try writer.save(sealed)
            try writer.finishAttempt(attemptID: attempt.attemptID, state: .succeeded, outcome: nil, at: now)
            return (next, sealTime)
        }
    }

    /// Records a failed refresh on the credential (status, reason, next try) and closes the
    /// attempt. The stored tokens are untouched: the next try presents the same refresh token.
    func recordFailure(
        _ error: any Error, metadata: CredentialMetadata, attempt: RefreshAttempt?, resumingLostAnswer: Bool
    ) async throws -> RefreshOutcome {
        let failure =
            error as? ProviderFailure
            ?? ProviderFailure(kind: .unknownOutcome, code: "internal_error", message: "\(error)")
        let now = vault.clock.now
        let decision = FailurePolicy(limits: limits(for: metadata.provider)).decide(
            failure, for: metadata, resumingLostAnswer: resumingLostAnswer, now: now,
            random: Double.random(in: 0..<1))
        let updated = try await writes.write(.normal) { writer -> CredentialMetadata? in
            if let attempt {
                try writer.finishAttempt(
                    attemptID: attempt.attemptID, state: .failed, outcome: "\(failure.kind.rawValue): \(failure.code)",
                    at: now)
            }
            guard try writer.updateSchedule(decision.update) else { return nil }
            return try writer.record(metadata.id)?.metadata
        }
        statistics.record { $0.failed[failure.kind.rawValue, default: 0] += 1 }
        if let event = decision.event, let updated { publish(event, metadata.id, updated) }
        // An instance without endpoints is reported by health once; its credentials, visited
        // ever more rarely, are not worth a warning each.
        let level: Logger.Level =
            failure.kind == .invalidGrant
            ? .error : failure.code == ProviderFailure.notConfigured("").code ? .debug : .warning
        logger.log(
            level: level, "refresh failed",
            metadata: [
                "tokenvault.credential.id": "\(metadata.id)", "tokenvault.provider": "\(metadata.provider)",
                "tokenvault.error.kind": "\(failure.kind.rawValue)", "tokenvault.error.code": "\(failure.code)",
                "tokenvault.error.message": "\(failure.message)",
                "tokenvault.refresh.next": "\(decision.update.refreshAt?.description ?? "none")",
            ])
        return .failed(failure, updated)
    }

    /// Writes a schedule change; the credential's metadata afterwards, or nil if it changed
    /// generation or disappeared meanwhile.
    func applySchedule(_ update: ScheduleUpdate) async throws -> CredentialMetadata? {
        try await writes.write(.normal) { writer -> CredentialMetadata? in
            guard try writer.updateSchedule(update) else { return nil }
            return try writer.record(update.id)?.metadata
        }
    }
}

extension ScheduleUpdate {
    /// The credential's current schedule and state, to be changed field by field.
    init(_ metadata: CredentialMetadata) {
        self.init(
            id: metadata.id, generation: metadata.generation, status: metadata.status, refreshAt: metadata.refreshAt,
            lastError: metadata.lastError, refreshFailures: metadata.refreshFailures, updatedAt: metadata.updatedAt)
    }
}
