import Foundation
import Logging
import TokenVaultCore
import TokenVaultLedger

extension RefreshEngine {
    /// One refresh of one credential, start to finish. Runs under the credential's single
    /// flight. Storage errors end as `.skipped` with the reason logged; provider failures are
    /// recorded on the credential. A credential whose last answer is still held by the ledger
    /// (its commit failed) is not refreshed again: that would present a spent refresh token.
    func perform(_ id: CredentialID, _ reason: RefreshReason) async -> RefreshOutcome {
        leases.noteActivity()
        // Only a resumption settles its `StrandedRefreshes` entry: a token read's run of the same
        // credential while the scheduler holds the entry must not drop it.
        let resuming = reason == .resumption
        if let held = vault.pendingCommit(for: id) {
            if resuming { stranded.settle(id) }
            statistics.record { $0.skipped += 1 }
            return .commitPending(held)
        }
        // A refused clock starts nothing new (`CorrectedClock`), nor does a failover not yet
        // reconciled (`FailoverGuard`); the scheduler waits for them too, so nothing comes back
        // here in a loop. What this node holds is finished: its attempt is leased to this node,
        // which beats on, so no other node would resume it.
        if let refusal = vault.clock.refusal ?? vault.failover.refusal(), reason != .recovery, reason != .resumption {
            statistics.record { $0.skipped += 1 }
            return .skipped(refusal.message, nil)
        }
        do {
            let outcome = try await performRefresh(id, reason)
            if resuming { stranded.settle(id) }
            return outcome
        } catch {
            statistics.record { $0.skipped += 1 }
            if let error = error as? VaultError, error.code.meansStorageFailed {
                // Its journal write may have committed unheard: the due list would come back to
                // it a lease period later (`StrandedRefreshes`).
                if stranded.add(id) { wake.signal() }
            } else {
                if resuming { stranded.settle(id) }
                if error is CancellationError { return .skipped("the refresh was cancelled", nil) }
            }
            logger.error(
                "refresh could not run",
                metadata: ["tokenvault.credential.id": "\(id)", "tokenvault.error": "\(error)"])
            return .skipped("the refresh could not run: \(error)", nil)
        }
    }

    private func performRefresh(_ id: CredentialID, _ reason: RefreshReason) async throws -> RefreshOutcome {
        // One read for both the state and the secrets: the refresh token presented must be the
        // one of the generation the attempt is journalled for.
        let credential: Credential
        let fields: Set<SealedField> = [.refreshToken, .idToken, .extras]
        do {
            // The cache holds the row after this node's own last commit of it (a refresh's new
            // tokens are kept as written), and the store answers from it without a thread hop. It
            // may be behind another node's commit not heard yet: journalling checks the generation.
            credential = try await vault.credential(id, opening: fields)
        } catch let error as VaultError where error.code == .credentialNotFound {
            return .skipped("credential \(id) does not exist", nil)
        } catch let error as VaultError where error.code.meansUnreadable {
            // A row that does not open (tampered, or its key term is gone) is not retried in a
            // loop: it is recorded as failing and probed at the slow interval.
            let metadata = try await vault.metadata(id)
            return try await recordFailure(
                ProviderFailure.unreadable(error), metadata: metadata, attempt: nil, resumingLostAnswer: false)
        }
        let metadata = credential.metadata
        let now = vault.clock.now
        if metadata.status == .revokePending {
            guard reason == .scheduled || reason == .recovery else {
                return .skipped("credential \(id) is being deleted", metadata)
            }
            return try await retryRevocation(credential)
        }
        if let skip = try await reasonNotToRefresh(metadata, reason: reason, now: now) { return skip }
        // A token exchange grant's subject token is read before the instance's gate: the subject's
        // own refresh may need that gate, and a subject with none says nothing of the instance.
        var subjectToken: SecretBytes?
        if let grant = metadata.grant, grant.type == .tokenExchange {
            do throws(ProviderFailure) {
                subjectToken = try await self.subjectToken(of: grant, for: id, provider: metadata.provider).0
            } catch {
                return try await recordFailure(error, metadata: metadata, attempt: nil, resumingLostAnswer: false)
            }
        }

        // The slot is held until the call ends: a reload that replaces it meanwhile lets this call
        // finish on the provider it started with, and releases that provider afterwards.
        while true {
            let slot = enterSlot(metadata.provider)
            defer { slot?.leave() }
            guard let slot, let provider = slot.provider else {
                let failure = ProviderFailure.notConfigured(metadata.provider, listed: slot != nil)
                return try await recordFailure(failure, metadata: metadata, attempt: nil, resumingLostAnswer: false)
            }
            let gate = slot.gate
            if let until = gate.admit(now: now) {
                return try await postpone(metadata, until: until, reason: reason, gate: gate)
            }
            await gate.acquire()
            defer { gate.release() }
            // A reload removed or re-pointed the instance while this call waited for the gate:
            // nothing was sent yet, so it goes to the instance in force now (or fails as removed).
            guard isCurrent(slot, metadata.provider) else { continue }
            return try await refresh(
                credential, reason: reason, provider: provider, gate: gate, planner: slot.planner,
                subjectToken: subjectToken)
        }
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
        case .pendingAuthorization:
            return .skipped("credential \(metadata.id) waits for a sign-in", metadata)
        case .active, .failing, .revokePending:
            break
        }
        guard metadata.isRenewable else { return try await retireIfExpired(metadata, now: now) }
        if let refreshTokenExpiry = metadata.refreshTokenExpiresAt, refreshTokenExpiry <= now {
            let update = ScheduleUpdate(
                id: metadata.id, generation: metadata.generation, expectedStatus: metadata.status, status: .expired,
                refreshAt: nil,
                lastError: CredentialFailure(
                    code: ProviderFailure.Code.refreshTokenExpired.rawValue,
                    message: "the refresh token expired at \(refreshTokenExpiry)",
                    at: now), refreshFailures: metadata.refreshFailures, updatedAt: now)
            let updated = try await vault.updateSchedule(update, event: .expired)
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
                try await vault.updateSchedule(update)
            }
            return .skipped("credential \(metadata.id) cannot be refreshed", metadata)
        }
        if metadata.kind == .verifyToken {
            let audit = systemAudit(
                metadata.id, operation: .credentialPurge, detail: "verify token expired at \(expiresAt)")
            guard try await vault.purge(metadata.id, generation: metadata.generation, now: now, audit: audit) else {
                return .skipped("credential \(metadata.id) changed before it could be purged", nil)
            }
            logger.info("expired verify token purged", metadata: ["tokenvault.credential.id": "\(metadata.id)"])
            return .skipped("credential \(metadata.id) expired and was purged", nil)
        }
        var update = ScheduleUpdate(metadata)
        update.status = .expired
        update.refreshAt = nil
        update.lastError = CredentialFailure(
            code: ProviderFailure.Code.expired.rawValue,
            message: "the access token expired at \(expiresAt) and there is no refresh token", at: now)
        update.updatedAt = now
        let updated = try await vault.updateSchedule(update, event: .expired)
        return .skipped("credential \(metadata.id) expired without a refresh token", updated ?? metadata)
    }

    /// The provider is paused: come back when it reopens, spread out so that the credentials
    /// do not all return at once.
    private func postpone(_ metadata: CredentialMetadata, until: Timestamp, reason: RefreshReason, gate: ProviderGate)
        async throws -> RefreshOutcome
    {
        statistics.record { $0.skipped += 1 }
        let spread = max(1, gate.limits.breakerCooldown / 2) * Double.random(in: 0..<1)
        if reason == .resumption {
            // Nothing is written for a resumption (the row may be a newer generation, which must
            // not come due sooner): it waits again, until the provider reopens.
            let seconds = max(0, until.seconds - vault.clock.now.seconds) + spread
            if stranded.add(metadata.id, notBefore: .now + .milliseconds(Int64(seconds * 1000))) { wake.signal() }
        } else if reason == .scheduled || reason == .recovery {
            var update = ScheduleUpdate(metadata)
            update.refreshAt = until.adding(seconds: spread)
            try await vault.updateSchedule(update)
        }
        return .skipped("provider \(metadata.provider) is paused until \(until)", metadata)
    }

    /// `provider`, `gate` and `planner` come from one slot (one provider table).
    private func refresh(
        _ credential: Credential, reason: RefreshReason, provider: any TokenProvider, gate: ProviderGate,
        planner: RefreshPlanner?, subjectToken: SecretBytes?
    ) async throws -> RefreshOutcome {
        let metadata = credential.metadata
        let id = metadata.id
        // The credential's own grant asked again when it has one, which spends nothing: its attempt
        // is journalled under a fingerprint of the generation. Else its refresh token.
        let refreshToken = metadata.grant == nil ? credential.secrets.refreshToken : nil
        guard refreshToken != nil || metadata.grant != nil else {
            return .skipped("credential \(id) has no refresh token", metadata)
        }
        let clock = ContinuousClock()
        var timings = RefreshTimings()
        let journalStart = clock.now
        let fingerprint = vault.fingerprint(
            refreshToken ?? SecretBytes(utf8: "grant:\(id):\(metadata.createdAt.milliseconds):\(metadata.generation)"))
        let lapses = leases.lapses
        var request = Vault.AttemptRequest(
            metadata: metadata, fingerprint: fingerprint, owner: leases.owner.id,
            leaseUntil: vault.clock.now.adding(seconds: options.leasePeriod)
        ) { [leases] holder, currentBeat in try await leases.isGone(holder, currentBeat: currentBeat) }
        request.resumeOnly = reason == .resumption
        let journalled = try await vault.beginAttempt(request)
        timings.journal = clock.now - journalStart
        guard let (attempt, resumedFrom) = journalled else {
            statistics.record { $0.skipped += 1 }
            if reason == .resumption {
                return .skipped("no interrupted refresh attempt of \(id) is open any more", metadata)
            }
            return .skipped("another process holds the refresh lease of \(id), or refreshed it already", metadata)
        }
        switch await leases.permit(journalled: lapses) {
        case .granted:
            break
        case .lapsed:
            // This node went without renewing after journalling: another node may have taken the
            // attempt over meanwhile. Journalling again reads it under the credential's lock.
            guard let again = try await vault.beginAttempt(request), again.0.attemptID == attempt.attemptID else {
                statistics.record { $0.skipped += 1 }
                return .skipped("the refresh lease of \(id) lapsed and another node has it now", metadata)
            }
        case .fenced:
            // Cut off from the database: a call now could be answered after another node took the
            // attempt over. The attempt stays ours; it goes on once a heartbeat goes through.
            statistics.record { $0.skipped += 1 }
            leases.afterRenewal { [weak self] in _ = self?.startInBackground(id, reason: .recovery) }
            logger.warning(
                "refresh held back: this node cannot renew its leases",
                metadata: ["tokenvault.credential.id": "\(id)", "tokenvault.attempt.id": "\(attempt.attemptID)"])
            return .skipped("this node cannot renew its leases; the refresh of \(id) waits for the database", metadata)
        }
        let resumed = resumedFrom != nil
        if let resumedFrom {
            statistics.record { $0.recovered += 1 }
            let previousNode = LeaseName.node(of: resumedFrom)
            logger.notice(
                previousNode == leases.owner.node
                    ? "resuming an interrupted refresh with the same refresh token"
                    : "taking over a refresh attempt of another node after its silence",
                metadata: [
                    "tokenvault.credential.id": "\(id)", "tokenvault.attempt.id": "\(attempt.attemptID)",
                    "tokenvault.lease.previous": "\(previousNode)",
                ])
        }
        // An attempt of this very process (a storage error ended it: `StrandedRefreshes`) lost
        // an answer only if `lostAnswers` says so; one of a crashed or silent process may have.
        let resumingLostAnswer =
            (resumed && resumedFrom != leases.owner.id)
            || metadata.lastError.map { ProviderFailure.lostAnswerCodes.contains(.init(rawValue: $0.code)) } ?? false
            || lostAnswers.contains(fingerprint)

        // The courier keeps the answer under this key until it is committed, and spools it if
        // this process dies first; a resumed attempt gets the spooled answer back.
        let call = ProviderCall(key: Self.refreshCallKey(attempt.attemptID))
        var sentAt = vault.clock.now
        let httpStart = clock.now
        let answer: Result<TokenPayload, ProviderFailure>
        do throws(ProviderFailure) {
            if let refreshToken {
                answer = .success(
                    try await provider.refresh(
                        RefreshRequest(
                            credentialID: id, refreshToken: refreshToken, scopes: metadata.scopes, call: call)))
            } else if let grant = metadata.grant {
                answer = .success(
                    try await obtain(
                        GrantRequest(credentialID: id, grant: grant, subjectToken: subjectToken, call: call),
                        at: provider))
            } else {
                return .skipped("credential \(id) has no refresh token", metadata)
            }
        } catch {
            answer = .failure(error)
        }
        let payload: TokenPayload
        switch answer {
        case .success(let received): payload = received
        case .failure(let error):
            switch error.kind {
            case .unknownOutcome: lostAnswers.insert(fingerprint)
            default: if error.httpStatus != nil { lostAnswers.remove(fingerprint) }  // the provider answered
            }
            // A grant's refusal is its own, but a refused client is every grant's: the instance is
            // paused at once (`FailurePolicy.providerClass`).
            if let reopening = gate.record(error, credential: id, byGrant: refreshToken == nil, now: vault.clock.now) {
                logger.warning(
                    "provider instance paused: its calls keep failing",
                    metadata: [
                        "tokenvault.provider": "\(metadata.provider)", "tokenvault.error.code": "\(error.code)",
                        "tokenvault.provider.next_probe": "\(reopening)",
                    ])
            }
            // The courier ended during the call: it spooled the answer if one came, and the next
            // courier hands it back to a call with the same key. So the attempt stays open (ours)
            // and is resumed, not closed, and the spooled copy is not settled. The same when the
            // spool was never read: an earlier daemon's courier may hold the answer.
            let courierEnded = error.code == .courierLost || error.code == .courierNotReady
            let outcome = try await recordFailure(
                error, metadata: metadata, attempt: courierEnded ? nil : attempt, resumingLostAnswer: resumingLostAnswer
            )
            if courierEnded { vault.awaitResumption(of: attempt) } else { settlement.settle(call.key) }
            return outcome
        }
        gate.recordSuccess()
        lostAnswers.remove(fingerprint)
        // An answer the courier kept through a restart: its lifetimes count from its own request.
        // The courier stamps its send time on this host's clock.
        if let original = payload.sentAt { sentAt = vault.clock.corrected(original) }
        timings.http = clock.now - httpStart
        let commitStart = clock.now
        let commit = await vault.commitRefresh(
            Vault.ReceivedRefresh(
                attempt: attempt, previous: metadata, previousSecrets: credential.secrets, payload: payload,
                sentAt: sentAt, planner: planner, whenDurable: { [settlement] in settlement.settle(call.key) }))
        timings.commit = clock.now - commitStart
        switch commit {
        case .committed(.committed(let refreshed)):
            if let rejection = payload.idTokenRejection {
                logger.warning(
                    "credential refreshed; the answer's id token was not accepted and is not stored",
                    metadata: [
                        "tokenvault.credential.id": "\(id)", "tokenvault.error.code": "\(rejection.code)",
                        "tokenvault.detail": "\(rejection.message)",
                    ])
            }
            statistics.record {
                $0.refreshed += 1
                $0.byProvider[metadata.provider, default: [:]]["succeeded", default: 0] += 1
            }
            options.timings?(timings)
            logger.debug(
                "credential refreshed",
                metadata: [
                    "tokenvault.credential.id": "\(id)",
                    "tokenvault.credential.generation": "\(refreshed.generation)",
                    "tokenvault.refresh.reason": "\(reason.rawValue)",
                ])
            return .refreshed(refreshed)
        case .committed(.leaseLost(let why)):
            // Reported by the ledger's observer (error log, metric, `last_error`).
            statistics.record { $0.skipped += 1 }
            return .skipped(why, nil)
        case .committed(.superseded(let why, let gone)):
            statistics.record { $0.skipped += 1 }
            logger.notice(
                "refresh answer not stored",
                metadata: ["tokenvault.credential.id": "\(id)", "tokenvault.detail": "\(why)"])
            if gone, provider.supportsRevocation {
                // Removed while the provider was answering: a removal means revoked, and these
                // tokens are held by nobody now. Once, with the permit this call holds, under a key
                // of its own (a recovery settles it: no credential waits for it). Not when the
                // credential was stored again: revoking the old grant's tokens may end the new
                // grant's too at a provider that revokes per user and client.
                if let failure = await revoke(
                    Credential(metadata: metadata, secrets: payload.secrets), provider: provider, gate: nil, tries: 1,
                    keyedAs: "orphan-\(attempt.attemptID)")
                {
                    logger.warning(
                        "the tokens a refresh received for a credential deleted meanwhile could not be revoked",
                        metadata: ["tokenvault.credential.id": "\(id)", "tokenvault.error.code": "\(failure.code)"])
                }
            }
            return .skipped(why, nil)
        case .held(let pending):
            // The ledger holds the new tokens and retries; the stored ones are served meanwhile.
            return .commitPending(pending)
        }
    }

    /// The call key of a journalled refresh attempt (the courier's and the spool's name for it).
    static func refreshCallKey(_ attemptID: String) -> String { "refresh:" + attemptID }

    /// Records a failed refresh on the credential (status, reason, next try) and closes the
    /// attempt. The stored tokens are untouched: the next try presents the same refresh token.
    func recordFailure(
        _ error: any Error, metadata: CredentialMetadata, attempt: RefreshAttempt?, resumingLostAnswer: Bool
    ) async throws -> RefreshOutcome {
        let failure =
            error as? ProviderFailure
            ?? ProviderFailure(kind: .unknownOutcome, code: .internalError, message: "\(error)")
        let now = vault.clock.now
        let decision = FailurePolicy(limits: limits(for: metadata.provider)).decide(
            failure, for: metadata, resumingLostAnswer: resumingLostAnswer, now: now,
            random: Double.random(in: 0..<1))
        let updated = try await vault.recordFailure(
            attempt: attempt, outcome: "\(failure.kind.rawValue): \(failure.code)", update: decision.update,
            event: decision.event)
        statistics.record {
            $0.failed[failure.kind.rawValue, default: 0] += 1
            $0.byProvider[metadata.provider, default: [:]][failure.kind.rawValue, default: 0] += 1
        }
        // An instance without endpoints is reported by health once; its credentials, visited
        // ever more rarely, are not worth a warning each.
        let level: Logger.Level =
            failure.kind == .invalidGrant
            ? .error : failure.code == .providerNotConfigured ? .debug : .warning
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
}
