import Foundation
import TokenVaultCore
import TokenVaultLedger

/// Device grants (RFC 8628), polled by the daemon: each due grant is claimed in the store (on
/// PostgreSQL one node holds it while it polls), redeemed through `redeem` like any code (the
/// courier spools an answer that arrives while the daemon dies, and the next start stores it),
/// and ended by the server's answer: tokens, `access_denied`, `expired_token`, or its expiry.
/// `authorization_pending` polls again after the interval, `slow_down` 5 seconds later each time.
extension RefreshEngine {
    /// How a poll ended, for logs, metrics and tests.
    public enum DevicePollOutcome: Equatable, Sendable {
        case stored
        case pending
        case slowDown(interval: Int)
        /// Worth another try later: the server or the path to it failed.
        case retry
        /// The sign-in is over without tokens: the server's refusal, or its expiry.
        case ended(reason: String)
    }

    /// Polls every device grant due now, once each (at most `limit`); answers what each poll did.
    @discardableResult
    public func pollDueDeviceSignIns(limit: Int = 32) async -> [CredentialID: DevicePollOutcome] {
        // Expiry is judged on this node's clock: not while it is too far off the database's.
        guard vault.clock.refusal == nil else { return [:] }
        let claimed: [Result<PendingDeviceSignIn, Vault.DeviceRowError>]
        do {
            claimed = try await vault.claimDevicePolls(
                claim: leases.owner.id, seconds: options.signIn.deviceClaimSeconds, limit: limit)
        } catch {
            logger.warning("device sign-ins could not be read: \(error)")
            return [:]
        }
        var outcomes: [CredentialID: DevicePollOutcome] = [:]
        await withTaskGroup(of: (CredentialID, DevicePollOutcome).self) { group in
            for row in claimed {
                switch row {
                case .success(let pending):
                    group.addTask { (pending.credentialID, await self.poll(pending)) }
                case .failure(let broken):
                    // A row that can never open is dropped; one the database failed to open is
                    // left for its claim to lapse.
                    let code = (broken.error as? VaultError)?.code
                    guard code == .integrityError || code == .unknownKeyTerm else {
                        logger.warning(
                            "a device sign-in could not be opened: \(broken.error)",
                            metadata: ["tokenvault.credential.id": "\(broken.credentialID)"])
                        continue
                    }
                    logger.error(
                        "a device sign-in does not open and is dropped: \(broken.error)",
                        metadata: ["tokenvault.credential.id": "\(broken.credentialID)"])
                    _ = try? await vault.removeDevicePoll(key: broken.key, ended: nil)
                }
            }
            for await (id, outcome) in group { outcomes[id] = outcome }
        }
        return outcomes
    }

    /// Wakes the device poller now (a grant was started), instead of at its next look.
    func wakeDevicePoller() { deviceWake.signal() }

    /// The poller's loop: a look every `devicePollCheckSeconds`, or at once when woken.
    public func runDevicePoller() async {
        while !Task.isCancelled {
            await pollDueDeviceSignIns()
            await deviceWake.wait(seconds: options.signIn.devicePollCheckSeconds)
        }
    }

    /// The key of a grant's polls: one for all of them, so the store can say whether the grant's
    /// tokens were stored (a daemon that died after the commit, or a commit held while the
    /// database was down) before its spent code is presented again.
    static func callKey(_ pending: PendingDeviceSignIn) -> String { "exchange:device:" + pending.key }

    /// Whether the grant's tokens are stored already: then it ends as authorized, not polled.
    private func storedAlready(_ pending: PendingDeviceSignIn) async -> Bool {
        guard (try? await vault.isAnswerStored(Self.callKey(pending))) == true else { return false }
        await endAuthorizedDeviceGrant(pending.key, pending.credentialID, provider: pending.provider)
        return true
    }

    /// A grant whose tokens are stored: `credential.authorized`, then its row goes. A failure
    /// leaves the row for the next look, which finds the tokens stored and ends it then. The
    /// streams hear of it once, from the look that removed the row.
    func endAuthorizedDeviceGrant(_ key: String, _ id: CredentialID, provider: String) async {
        do {
            try await vault.announceSignInEnded(id, provider: provider, key: key, reason: nil)
            let shown = try await vault.shownMetadata(id, endingGrant: key)
            if try await vault.removeDevicePoll(key: key, ended: .authorized) {
                statistics.record { $0.deviceSignInsAuthorized += 1 }
                vault.publishSignInEnded(id, .authorized, shown: shown)
            }
        } catch {
            logger.warning(
                "a device sign-in's end could not be written; it is ended at its next look: \(error)",
                metadata: ["tokenvault.credential.id": "\(id)"])
        }
    }

    private func poll(_ pending: PendingDeviceSignIn) async -> DevicePollOutcome {
        if await storedAlready(pending) { return .stored }
        let now = vault.clock.now
        guard now < pending.expiresAt else {
            return await end(pending, reason: "expired_token", message: "the device code expired before approval")
        }
        let audit = AuditEvent(
            at: now, uid: pending.uid, gid: pending.gid, operation: .credentialAuthorized,
            credentialID: pending.credentialID, outcome: .allowed, detail: pending.provider + " device")
        do {
            var subject: String?
            if pending.keepsSubject {
                do {
                    subject = try await vault.metadata(pending.credentialID).subject ?? ""
                } catch let error as VaultError where error.code == .credentialNotFound {
                    subject = nil
                }
            }
            let redeemed = try await redeem(
                CodeRedemption(
                    provider: pending.provider,
                    request: CodeExchangeRequest(
                        code: pending.deviceCode, codeVerifier: nil, redirectURI: "",
                        credentialID: pending.credentialID, grant: .deviceCode),
                    nonce: nil, issuer: pending.issuer, idTokenRequired: false, requestedScopes: pending.scopes,
                    expectedSubject: subject, labels: pending.labels, audit: audit, deviceGrantKey: pending.key),
                callKey: Self.callKey(pending))
            logger.notice(
                "credential stored from a device sign-in",
                metadata: [
                    "tokenvault.credential.id": "\(pending.credentialID)",
                    "tokenvault.commit.held": "\(redeemed.stored.isHeld)",
                ])
            if redeemed.stored.isHeld {
                // Not polled again while the ledger holds the tokens: the next look after the
                // claim's time finds them stored (and ends the grant) once the database is back.
                _ = await schedule(
                    pending, interval: pending.interval, after: Int(options.signIn.deviceClaimSeconds), outcome: .stored
                )
            }
            return .stored
        } catch let failure as ProviderFailure {
            switch failure.code.rawValue {
            case "authorization_pending":
                return await schedule(pending, interval: pending.interval, outcome: .pending)
            case "slow_down":
                // RFC 8628 section 3.5: 5 seconds more, for this and every later request.
                let interval = min(pending.interval + 5, 3600)
                return await schedule(pending, interval: interval, outcome: .slowDown(interval: interval))
            default: break
            }
            switch failure.kind {
            case .transient, .unknownOutcome:
                // The device code is good until it expires: try again after the interval (or
                // the server's Retry-After).
                let wait = max(pending.interval, Int((failure.retryAfter ?? 0).rounded(.up)))
                logger.info(
                    "a device sign-in's poll failed; polling again in \(wait) s: \(failure)",
                    metadata: ["tokenvault.credential.id": "\(pending.credentialID)"])
                return await schedule(pending, interval: pending.interval, after: wait, outcome: .retry)
            case .invalidGrant, .misconfigured:
                return await end(pending, reason: failure.code.rawValue, message: failure.message)
            }
        } catch let error as VaultError where error.code == .storageUnavailable {
            // Not redeemed, or redeemed and held by the ledger until the database is back (then
            // the next poll finds the row gone or the code spent): look again after the interval.
            return await schedule(pending, interval: pending.interval, outcome: .retry)
        } catch let error as VaultError {
            // The answer was refused (its id token, another account): the code is spent.
            return await end(pending, reason: error.code.rawValue, message: error.detail)
        } catch {
            return await end(pending, reason: "internal_error", message: "\(error)")
        }
    }

    private func schedule(
        _ pending: PendingDeviceSignIn, interval: Int, after wait: Int? = nil, outcome: DevicePollOutcome
    ) async -> DevicePollOutcome {
        let at = vault.clock.now.adding(seconds: Double(wait ?? interval))
        do {
            _ = try await vault.scheduleDevicePoll(
                key: pending.key, claim: leases.owner.id, interval: interval, at: at)
        } catch {
            // The claim lapses and the poll comes back then.
            logger.warning(
                "a device sign-in's next poll could not be written: \(error)",
                metadata: ["tokenvault.credential.id": "\(pending.credentialID)"])
        }
        return outcome
    }

    /// The sign-in is over without tokens: its row goes, and the audit trail, the webhooks and
    /// the log say why.
    private func end(_ pending: PendingDeviceSignIn, reason: String, message: String) async -> DevicePollOutcome {
        // A spent code is refused: if it was spent on this grant's own stored tokens (a held
        // commit that went in since), the grant is authorized, not failed.
        if await storedAlready(pending) { return .stored }
        logger.notice(
            "a device sign-in ended without tokens: \(reason): \(message)",
            metadata: ["tokenvault.credential.id": "\(pending.credentialID)"])
        do {
            try await vault.announceSignInEnded(
                pending.credentialID, provider: pending.provider, key: pending.key, reason: reason)
            try await vault.appendAudits([
                AuditEvent(
                    at: vault.clock.now, uid: pending.uid, gid: pending.gid, operation: .credentialAuthorized,
                    credentialID: pending.credentialID, outcome: .failed, detail: reason)
            ])
            let shown = try await vault.shownMetadata(pending.credentialID, endingGrant: pending.key)
            if try await vault.removeDevicePoll(key: pending.key, ended: .failed(reason: reason)) {
                statistics.record { $0.deviceSignInsFailed += 1 }
                vault.publishSignInEnded(pending.credentialID, .failed(reason: reason), shown: shown)
            }
        } catch {
            // The row stays, claimed until its claim lapses: the end is written then.
            logger.warning(
                "a device sign-in's end could not be written: \(error)",
                metadata: ["tokenvault.credential.id": "\(pending.credentialID)"])
            return .retry
        }
        return .ended(reason: reason)
    }
}
