import TokenVaultCore
import TokenVaultLedger

/// Credentials the vault obtains itself, by their grant (`CredentialGrant`): a client credentials
/// grant, or a token exchange of another credential's access token. The first tokens come at a
/// put, here; every renewal after is made by the refresh path under the same single flight and
/// lease as a refresh (`RefreshEngine+Refresh.swift`). Nothing is spent by asking again, so a lost
/// answer costs nothing but the call.
extension RefreshEngine {
    public func obtain(_ acquisition: CredentialAcquisition) async throws -> CredentialMetadata {
        var grant = acquisition.grant
        // Before the instance's gate: the subject's own refresh may need it.
        var subjectToken: SecretBytes?
        if grant.type == .tokenExchange {
            let (token, subject) = try await self.subjectToken(
                of: grant, for: acquisition.id, provider: acquisition.provider)
            subjectToken = token
            grant.subjectCreatedAt = subject.createdAt
        }
        let slot = enterSlot(acquisition.provider)
        defer { slot?.leave() }
        guard let slot, let provider = slot.provider else {
            throw ProviderFailure.notConfigured(acquisition.provider, listed: slot != nil)
        }
        let sentAt = vault.clock.now
        // A paused instance is not probed by a put: its refreshes do that.
        if let until = slot.gate.pausedUntil(now: sentAt) {
            throw ProviderFailure(
                kind: .transient, code: .providerPaused,
                message: "provider instance \(acquisition.provider) is paused until \(until); nothing was sent",
                retryAfter: max(1, until.seconds - sentAt.seconds))
        }
        await slot.gate.acquire()
        let answer: Result<TokenPayload, ProviderFailure>
        do throws(ProviderFailure) {
            answer = .success(
                try await obtain(
                    GrantRequest(credentialID: acquisition.id, grant: grant, subjectToken: subjectToken), at: provider))
        } catch {
            answer = .failure(error)
        }
        slot.gate.release()
        switch answer {
        case .success: slot.gate.recordSuccess()
        case .failure(let failure):
            slot.gate.record(failure, credential: acquisition.id, byGrant: true, now: vault.clock.now)
        }
        var payload = try answer.get()
        if payload.scopes.isEmpty { payload.scopes = grant.scopes }
        return try await vault.put(
            acquisition.id, payload: payload, provider: acquisition.provider, labels: acquisition.labels,
            audit: acquisition.audit, planner: slot.planner, issuedAt: sentAt, grant: grant)
    }

    /// Asks `provider` for tokens by a credential's grant, at a put and at every renewal alike.
    /// The answer is the client's own: a refresh token (RFC 6749 section 4.4.3 says none should
    /// come) would make the credential depend on a session that can die, and an id token or
    /// subject would name a person, so only the access token and its lifetime are kept. A
    /// refusal is the grant's: no person's grant died, so nothing a new sign-in would mend, and
    /// `invalid_grant` is recorded as a misconfiguration, probed slowly, never `needs_reauth`.
    func obtain(_ request: GrantRequest, at provider: any TokenProvider) async throws(ProviderFailure) -> TokenPayload {
        var payload: TokenPayload
        do throws(ProviderFailure) {
            switch request.grant.type {
            case .clientCredentials:
                payload = try await provider.obtain(request)
            case .tokenExchange:
                guard let subject = request.subjectToken else {
                    throw ProviderFailure(
                        kind: .misconfigured, code: .subjectUnavailable,
                        message: "no subject token was read for the exchange; nothing was sent")
                }
                payload = try await provider.exchangeToken(
                    request.grant.exchange, subjectToken: subject, for: request.credentialID)
                try Self.refuseSubjectAnswered(payload, subject: subject)
            }
        } catch {
            guard error.kind == .invalidGrant else { throw error }
            var failure = error
            failure.kind = .misconfigured
            throw failure
        }
        payload.secrets.refreshToken = nil
        payload.refreshTokenExpiry = .unknown
        payload.secrets.idToken = nil
        payload.idTokenRejection = nil
        payload.subject = nil
        return payload
    }

    /// The access token a token exchange grant exchanges, read before the instance's gate is
    /// entered: its subject credential's current one, refreshed first when it has less than a
    /// minute left. The subject must still be the credential the grant was made from (same
    /// creation, same instance), so a subject removed and stored again by someone else, or moved to
    /// another instance, is not exchanged. A subject with no token to give fails the grant as
    /// `subject_unavailable`: nothing is sent, and it is probed slowly, like a misconfiguration,
    /// until the subject is mended.
    func subjectToken(of grant: CredentialGrant, for id: CredentialID, provider: String)
        async throws(ProviderFailure) -> (SecretBytes, CredentialMetadata)
    {
        func unavailable(_ why: String) -> ProviderFailure {
            ProviderFailure(
                kind: .misconfigured, code: .subjectUnavailable,
                message: "the subject credential \(grant.subject?.description ?? "(none)") \(why); nothing was sent")
        }
        guard let subject = grant.subject, subject != id else { throw unavailable("is not another credential") }
        do {
            var credential = try await vault.credential(subject, opening: [.accessToken])
            let createdAt = credential.metadata.createdAt
            if let created = grant.subjectCreatedAt, created != createdAt {
                throw unavailable("was removed and stored again since this credential was made from it")
            }
            guard credential.metadata.provider == provider else {
                throw unavailable("belongs to provider instance \(credential.metadata.provider) now, not \(provider)")
            }
            if credential.metadata.isRenewable,
                credential.metadata.expiresAt.map({ $0 < vault.clock.now.adding(seconds: 60) }) ?? false
            {
                _ = try await refreshOnDemand(subject, minimumTTL: 60)
                credential = try await vault.credential(subject, opening: [.accessToken])
                guard credential.metadata.createdAt == createdAt else {
                    throw unavailable("was removed and stored again meanwhile")
                }
            }
            let metadata = credential.metadata
            guard metadata.status == .active || metadata.status == .failing else {
                throw unavailable("is \(metadata.status.rawValue)")
            }
            if let expiresAt = metadata.expiresAt, expiresAt <= vault.clock.now {
                throw unavailable("holds an expired access token")
            }
            return (credential.secrets.accessToken, metadata)
        } catch let failure as ProviderFailure {
            throw failure
        } catch let error as VaultError where error.code == .credentialNotFound {
            throw unavailable("does not exist")
        } catch {
            throw unavailable("cannot be read: \(error)")
        }
    }
}
