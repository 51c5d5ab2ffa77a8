import Foundation
import Logging
import Synchronization
import TokenVaultCore

extension RefreshEngine {
    /// `DELETE`: revoke at the provider (refresh token, then access token; RFC 7009), then
    /// delete. The credential is marked `revoke_pending` before the provider is called, so a
    /// crash or an outage leaves it visible and retried, never silently half-deleted. Queued
    /// behind any refresh in flight for the credential, so no refresh can mint tokens after
    /// they were revoked.
    public func remove(_ id: CredentialID, force: Bool, audit: AuditEvent?) async throws -> RemovalOutcome {
        let result = ResultBox<RemovalOutcome>()
        _ = await flight.queue(id) { [self] in
            result.set(await Result(catching: { try await performRemoval(id, force: force, audit: audit) }))
            return .skipped("credential \(id) is being removed", nil)
        }
        return try result.get()
    }

    private func performRemoval(_ id: CredentialID, force: Bool, audit: AuditEvent?) async throws -> RemovalOutcome {
        if let held = vault.pendingCommit(for: id) {
            // The held tokens are the live ones at the provider; revoking the stored ones would
            // leave them alive, and deleting the row would make the held commit moot.
            throw VaultError(
                code: .commitPending,
                message: "new tokens of \(id) are waiting to be committed (\(held.lastError)); delete it again once "
                    + "they are", retryAfter: 5)
        }
        let record: Credential
        do {
            record = try await vault.credential(id, opening: [.refreshToken])
        } catch let error as VaultError where error.code.meansUnreadable {
            // Tokens that do not open cannot be revoked: only a forced delete removes the row.
            guard force else { throw error }
            try await delete(id, audit: audit, detail: "forced: tokens unreadable (\(error.code))")
            return .deleted(revoked: false)
        }
        let slot = enterSlot(record.metadata.provider)
        defer { slot?.leave() }
        guard let slot, let provider = slot.provider, provider.supportsRevocation else {
            try await delete(id, audit: audit, detail: "no revocation endpoint: removed locally only")
            return .deleted(revoked: false)
        }
        var pending = ScheduleUpdate(record.metadata)
        // A removal asked for overrides whatever status the row has now at this generation (its
        // read may come from a cache behind another node's change of it).
        pending.expectedStatus = nil
        pending.status = .revokePending
        // If this process dies before the revocation ends, the scheduler takes it up again then
        // (a living process sets the next try itself, or deletes the row).
        pending.refreshAt = vault.clock.now.adding(seconds: options.leasePeriod)
        pending.updatedAt = vault.clock.now
        // Not marked: another generation was stored since the read (a refresh, a put), whose
        // tokens these would not revoke. The caller tries again.
        guard let marked = try await vault.updateSchedule(pending, event: .revokePending) else {
            throw VaultError.conflict("credential \(id) changed as its removal began; ask again")
        }

        if let failure = await revoke(
            record, provider: provider, gate: slot.gate, tries: force ? 1 : options.revocationAttempts)
        {
            guard force else { return try await keepPending(record.metadata, failure: failure) }
            try await delete(id, audit: audit, detail: "forced: revocation failed (\(failure.code))")
            return .deleted(revoked: false)
        }
        // Only the generation revoked: a refresh that was with the provider as the removal began
        // may have stored new tokens since (still pending removal), which the next try revokes.
        guard try await delete(id, audit: audit, detail: "revoked at the provider", revoked: true, ifStill: marked)
        else {
            let failure = ProviderFailure(
                kind: .transient, code: .refreshedDuringRemoval,
                message: "a refresh stored new tokens while the old ones were being revoked; they are revoked next")
            return try await keepPending(try vault.metadata(id), failure: failure)
        }
        return .deleted(revoked: true)
    }

    /// The scheduler's retry of a `revoke_pending` credential. `record` may come from a cache
    /// behind another node's change: the row is removed only if it is still the one read.
    func retryRevocation(_ record: Credential) async throws -> RefreshOutcome {
        let id = record.metadata.id
        let slot = enterSlot(record.metadata.provider)
        defer { slot?.leave() }
        let changed = RefreshOutcome.skipped("credential \(id) changed since its removal was planned; kept", nil)
        guard let slot, let provider = slot.provider, provider.supportsRevocation else {
            let detail = "no revocation endpoint: removed locally only"
            guard try await delete(id, audit: systemAudit(id), detail: detail, ifStill: record.metadata) else {
                return changed
            }
            return .skipped("credential \(id) removed", nil)
        }
        if let failure = await revoke(record, provider: provider, gate: slot.gate, tries: 1) {
            _ = try await keepPending(record.metadata, failure: failure)
            return .failed(failure, nil)
        }
        let detail = "revoked at the provider after a retry"
        guard try await delete(id, audit: systemAudit(id), detail: detail, revoked: true, ifStill: record.metadata)
        else { return changed }
        return .skipped("credential \(id) revoked and removed", nil)
    }

    /// Revokes the refresh token, then the access token. Nil on success; otherwise the failure
    /// that stopped it. Transient failures are retried up to `tries` times per token.
    /// `gate`: nil when the caller holds a permit of it already (a refresh's call, revoking what
    /// it received). `keyedAs`: the call's key part after the credential's id, by default its
    /// generation (what a recovery after a restart looks for).
    func revoke(
        _ record: Credential, provider: any TokenProvider, gate: ProviderGate?, tries: Int, keyedAs: String? = nil
    ) async -> ProviderFailure? {
        let secrets = record.secrets
        let tokens: [(SecretBytes, TokenHint)] =
            (secrets.refreshToken.map { [($0, TokenHint.refreshToken)] } ?? []) + [(secrets.accessToken, .accessToken)]
        for (token, hint) in tokens {
            var attempt = 0
            while true {
                attempt += 1
                await gate?.acquire()
                // Keyed like a refresh, so an answer spooled while the daemon was down is used
                // instead of a second request; revocation is idempotent, so it is settled at once.
                let call = ProviderCall(
                    key: "revoke:\(record.metadata.id):\(keyedAs ?? "\(record.metadata.generation)"):\(hint.rawValue)")
                let result: ProviderFailure?
                do throws(ProviderFailure) {
                    try await provider.revoke(token, hint: hint, call: call)
                    result = nil
                } catch {
                    result = error
                }
                settlement.settle(call.key)
                gate?.release()
                guard let failure = result else { break }
                let retryable = failure.kind == .transient || failure.kind == .unknownOutcome
                guard retryable, attempt < tries else {
                    statistics.record { $0.revocationFailures += 1 }
                    return failure
                }
                let wait = min(failure.retryAfter ?? 0.5 * Double(1 << (attempt - 1)), 5)
                try? await Task.sleep(for: .seconds(wait))
            }
        }
        statistics.record { $0.revoked += 1 }
        return nil
    }

    private func keepPending(_ metadata: CredentialMetadata, failure: ProviderFailure) async throws
        -> RemovalOutcome
    {
        let now = vault.clock.now
        var update = ScheduleUpdate(metadata)
        // The removal marked the row pending (or found it so): it still is, unless it changed.
        update.expectedStatus = .revokePending
        update.status = .revokePending
        update.refreshFailures = metadata.refreshFailures + 1
        update.lastError = CredentialFailure(
            code: failure.code.rawValue, message: "revocation failed: \(failure.message)", at: now)
        let wait = limits(for: metadata.provider).retry.delay(
            attempt: update.refreshFailures, retryAfter: failure.retryAfter, random: Double.random(in: 0..<1))
        update.refreshAt = now.adding(seconds: max(wait, 1))
        update.updatedAt = now
        // Announced once per removal: its retries fail on, and the webhook said so already.
        let first = metadata.status != .revokePending
        let updated = try await vault.updateSchedule(update, announcing: first ? [.revocationFailing] : [])
        // The scheduler may be asleep until the lease-long time `performRemoval` set: the retry
        // is due sooner.
        wakeScheduler()
        logger.warning(
            "revocation failed; the credential stays revoke_pending and is retried",
            metadata: [
                "tokenvault.credential.id": "\(metadata.id)", "tokenvault.error.code": "\(failure.code)",
                "tokenvault.refresh.next": "\(update.refreshAt?.description ?? "none")",
            ])
        return .revokePending(updated ?? metadata, failure)
    }

    /// `planned`: only if the row is still the one it was read as (`Vault.delete(ifStill:)`);
    /// false when it was kept for that reason.
    @discardableResult
    private func delete(
        _ id: CredentialID, audit: AuditEvent?, detail: String, revoked: Bool = false,
        ifStill planned: CredentialMetadata? = nil
    ) async throws -> Bool {
        var event = audit
        event?.detail = detail
        guard try await vault.delete(id, audit: event, revoked: revoked, ifStill: planned) else {
            logger.info(
                "credential kept: it changed since its removal was planned",
                metadata: ["tokenvault.credential.id": "\(id)"])
            return false
        }
        logger.info(
            "credential deleted", metadata: ["tokenvault.credential.id": "\(id)", "tokenvault.detail": "\(detail)"])
        return true
    }

    /// An audit row for something the engine did on its own (no peer asked): the daemon's
    /// own uid, gid and pid.
    func systemAudit(_ id: CredentialID, operation: AuditOperation = .credentialDelete, detail: String? = nil)
        -> AuditEvent
    {
        AuditEvent(
            at: vault.clock.now, uid: getuid(), gid: getgid(), pid: getpid(), operation: operation, credentialID: id,
            outcome: .succeeded, detail: detail)
    }
}

/// Carries a result out of a single-flight operation.
final class ResultBox<Value: Sendable>: Sendable {
    private let value = Mutex<Result<Value, any Error>?>(nil)

    func set(_ result: Result<Value, any Error>) { value.withLock { $0 = result } }

    func get() throws -> Value {
        guard let result = value.withLock({ $0 }) else { throw VaultError.storage("the removal did not run") }
        return try result.get()
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
