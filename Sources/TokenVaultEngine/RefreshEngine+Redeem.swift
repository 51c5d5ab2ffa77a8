import Foundation
import TokenVaultCore
import TokenVaultLedger

/// Server-side code exchange, and its recovery: the call is keyed (`exchange:<id>`) with
/// everything needed to store its result as context, so if the daemon dies while the provider
/// answers, the courier spools the answer and the next start stores it.
extension RefreshEngine {
    public func redeem(_ redemption: CodeRedemption) async throws -> RedeemedCode {
        try await redeem(redemption, callKey: "exchange:" + UUID().uuidString)
    }

    /// Under `callKey`: a device grant's polls share one, so that whether its tokens were stored
    /// can be asked of the store.
    func redeem(_ redemption: CodeRedemption, callKey: String) async throws -> RedeemedCode {
        let context = try SpooledExchange(redemption).encoded()
        return try await redeem(redemption, call: ProviderCall(key: callKey, context: context), recovering: false)
    }

    /// Redeems through `call` (a new key, or a spooled one being `recovering`) and settles it once
    /// the outcome is durable.
    private func redeem(_ redemption: CodeRedemption, call: ProviderCall, recovering: Bool) async throws
        -> RedeemedCode
    {
        let slot = enterSlot(redemption.provider)
        defer { slot?.leave() }
        guard let slot, let provider = slot.provider else {
            throw ProviderFailure.notConfigured(redemption.provider, listed: slot != nil)
        }
        let gate = slot.gate
        await gate.acquire()
        var request = redemption.request
        request.call = call
        let answer: Result<TokenPayload, ProviderFailure>
        do throws(ProviderFailure) {
            answer = .success(try await provider.exchange(request))
        } catch {
            answer = .failure(error)
        }
        gate.release()
        var payload: TokenPayload
        do {
            payload = try answer.get()
            if let rejection = payload.idTokenRejection { throw rejection }
            // An answer recovered from the spool is judged at the time it was answered: an id token
            // that expired while no daemon ran must not cost the only copy of the tokens.
            try IDTokenCheck.check(
                idToken: payload.secrets.idToken, expectedNonce: redemption.nonce, clientID: provider.clientID,
                issuer: redemption.issuer, required: redemption.idTokenRequired,
                now: recovering ? (payload.sentAt.map(vault.clock.corrected) ?? vault.clock.now) : vault.clock.now)
            if let expected = redemption.expectedSubject, payload.subject != expected || expected.isEmpty {
                throw VaultError(
                    code: .authorizationMismatch,
                    message: "the person signed in as another account than the credential's; replacing it needs "
                        + "credential:write")
            }
        } catch {
            // Recovering a spooled answer, a failure before any answer was read (the request
            // could not be built: a signer, a discovery document; the courier) keeps the spooled
            // copy for the next start: it is the only copy of those tokens.
            // So does an answer whose id token could not be checked (the issuer's keys could not be
            // read): the next start checks it again.
            let unchecked = (error as? VaultError)?.code == .providerUnavailable
            let answered = !unchecked && ((error as? ProviderFailure).map { $0.httpStatus != nil } ?? true)
            if !recovering || answered { settlement.settle(call.key) }
            throw error
        }
        if payload.scopes.isEmpty { payload.scopes = redemption.requestedScopes }
        // The code is spent: these tokens exist nowhere else, so the ledger never drops them.
        let stored = try await vault.storeReceived(
            Vault.NewCredential(
                id: redemption.request.credentialID, payload: payload, provider: redemption.provider,
                labels: redemption.labels, audit: redemption.audit,
                // An answer recovered from the spool: its lifetimes count from its own request.
                issuedAt: payload.sentAt.map(vault.clock.corrected), answerKey: call.key, planner: slot.planner),
            whenDurable: { [settlement] in settlement.settle(call.key) })
        if let key = redemption.deviceGrantKey, case .committed = stored {
            // Held tokens commit later; the poller ends the grant once the store says they are in
            // (`RefreshEngine+DeviceGrant.swift`), as it does when this fails.
            await endAuthorizedDeviceGrant(key, redemption.request.credentialID, provider: redemption.provider)
        }
        return RedeemedCode(payload: payload, stored: stored)
    }

    /// Stores the code exchanges whose answers a courier spooled while no daemon ran (the
    /// caller got an error; the credential appears now), and settles spooled answers nobody will
    /// ask for again: refreshes whose attempt was closed meanwhile, revocations of credentials
    /// no longer waiting for one. Run once at start, before open attempts are resumed.
    func recoverSpool() async {
        for (key, context) in settlement.spooled(prefix: "exchange:") {
            // Stored before the daemon died, not yet settled: applying it again would replace
            // whatever the credential got since (a refresh) with these older tokens.
            if (try? await vault.isAnswerStored(key)) == true {
                settlement.settle(key)
                logger.info("a spooled code exchange was stored already", metadata: ["tokenvault.call.key": "\(key)"])
                continue
            }
            guard let context, let spooled = try? SpooledExchange.decode(context),
                let redemption = try? spooled.redemption()
            else {
                logger.error(
                    "a spooled code exchange has no readable context; left in the spool",
                    metadata: ["tokenvault.call.key": "\(key)"])
                continue
            }
            do {
                let redeemed = try await redeem(
                    redemption, call: ProviderCall(key: key, context: context), recovering: true)
                logger.notice(
                    "credential stored from a code exchange answered while the daemon was down",
                    metadata: [
                        "tokenvault.credential.id": "\(redemption.request.credentialID)",
                        "tokenvault.commit.held": "\(redeemed.stored.isHeld)",
                    ])
            } catch {
                logger.warning(
                    "a code exchange answered while the daemon was down is not stored: \(error)",
                    metadata: ["tokenvault.credential.id": "\(redemption.request.credentialID)"])
            }
        }
        do {
            let open = Set(try await vault.openAttempts(limit: 100_000).map(\.attemptID))
            for (key, _) in settlement.spooled(prefix: "refresh:")
            where !open.contains(String(key.dropFirst("refresh:".count))) {
                settlement.settle(key)
            }
            for (key, _) in settlement.spooled(prefix: "revoke:") {
                let parts = key.split(separator: ":")
                let id = parts.count == 4 ? try? CredentialID(String(parts[1])) : nil
                // Gone (notFound) reads as nil: nothing waits for that revocation any more.
                var metadata: CredentialMetadata?
                if let id { metadata = try? await vault.metadata(id) }
                if metadata?.status != .revokePending || "\(metadata?.generation ?? 0)" != parts[2] {
                    settlement.settle(key)
                } else if let id {
                    // Finish the removal now, with the spooled answer.
                    _ = startInBackground(id, reason: .recovery)
                }
            }
        } catch {
            logger.error("the spool could not be checked against the journal: \(error)")
        }
    }
}

/// An exchange's context as the spool keeps it: everything but the one-time secrets (code,
/// verifier), which a recovered answer does not need.
struct SpooledExchange: Codable {
    var credentialID: String
    var provider: String
    var redirectURI: String
    var state: String?
    var nonce: String?
    var issuer: String?
    var idTokenRequired: Bool?
    var requestedScopes: [String]?
    var expectedSubject: String?
    var labels: [String: String]?
    /// The audit row's operation (a sign-in's finish, or a plain exchange when absent).
    var operation: String?
    /// The device grant redeemed, ended once the recovered answer is stored.
    var deviceGrantKey: String?
    /// The audit row's detail.
    var detail: String?
    var auditAt: Int64
    var uid: UInt32?
    var gid: UInt32?
    var pid: Int32?

    init(_ redemption: CodeRedemption) {
        credentialID = redemption.request.credentialID.description
        provider = redemption.provider
        redirectURI = redemption.request.redirectURI
        state = redemption.request.state
        nonce = redemption.nonce
        issuer = redemption.issuer
        idTokenRequired = redemption.idTokenRequired
        requestedScopes = redemption.requestedScopes
        expectedSubject = redemption.expectedSubject
        labels = redemption.labels
        operation = redemption.audit.operation
        deviceGrantKey = redemption.deviceGrantKey
        detail = redemption.audit.detail
        auditAt = redemption.audit.at.milliseconds
        uid = redemption.audit.uid
        gid = redemption.audit.gid
        pid = redemption.audit.pid
    }

    func encoded() throws -> SecretBytes { SecretBytes(try JSONEncoder().encode(self)) }

    static func decode(_ context: SecretBytes) throws -> SpooledExchange {
        try JSONDecoder().decode(SpooledExchange.self, from: context.withUnsafeBytes { Data($0) })
    }

    /// The redemption to replay against the spooled answer (the request is never sent again).
    func redemption() throws -> CodeRedemption {
        let id = try CredentialID(credentialID)
        return CodeRedemption(
            provider: provider,
            request: CodeExchangeRequest(
                code: SecretBytes(utf8: "spooled"), codeVerifier: nil, redirectURI: redirectURI, state: state,
                credentialID: id),
            nonce: nonce, issuer: issuer, idTokenRequired: idTokenRequired ?? true,
            requestedScopes: requestedScopes ?? [], expectedSubject: expectedSubject, labels: labels,
            audit: AuditEvent(
                at: Timestamp(milliseconds: auditAt), uid: uid, gid: gid, pid: pid,
                operation: operation.map(AuditOperation.init(stored:)) ?? .credentialExchange,
                credentialID: id, outcome: .allowed,
                detail: (detail.map { $0 + ", " } ?? "") + "answer recovered from the spool"),
            deviceGrantKey: deviceGrantKey)
    }
}
