import TokenVaultCore
import TokenVaultLedger

/// Credentials the vault obtains itself, by a client credentials grant (`CredentialGrant`): the
/// first tokens at a put, here, and every renewal after, which the refresh path makes under the
/// same single flight and lease as a refresh (`RefreshEngine+Refresh.swift`). Nothing is spent by
/// asking again, so a lost answer costs nothing but the call.
extension RefreshEngine {
    public func obtain(_ acquisition: CredentialAcquisition) async throws -> CredentialMetadata {
        let slot = enterSlot(acquisition.provider)
        defer { slot?.leave() }
        guard let slot, let provider = slot.provider else {
            throw ProviderFailure.notConfigured(acquisition.provider, listed: slot != nil)
        }
        let sentAt = vault.clock.now
        if let until = slot.gate.admit(now: sentAt) {
            throw ProviderFailure(
                kind: .transient, code: .providerPaused,
                message: "provider instance \(acquisition.provider) is paused until \(until); nothing was sent",
                retryAfter: max(1, until.seconds - sentAt.seconds))
        }
        await slot.gate.acquire()
        let answer: Result<TokenPayload, ProviderFailure>
        do throws(ProviderFailure) {
            answer = .success(
                try await obtain(GrantRequest(credentialID: acquisition.id, grant: acquisition.grant), at: provider))
        } catch {
            answer = .failure(error)
        }
        slot.gate.release()
        switch answer {
        case .success: slot.gate.recordSuccess()
        case .failure(let failure) where failure.refusesTheClient:
            // The instance's client is refused: its renewals would be too (`RefreshEngine+Refresh`).
            slot.gate.record(failure, credential: nil, now: vault.clock.now)
        case .failure: break
        }
        var payload = try answer.get()
        if payload.scopes.isEmpty { payload.scopes = acquisition.grant.scopes }
        return try await vault.put(
            acquisition.id, payload: payload, provider: acquisition.provider, labels: acquisition.labels,
            audit: acquisition.audit, planner: slot.planner, issuedAt: sentAt, grant: acquisition.grant)
    }

    /// Asks `provider` for tokens by a credential's grant, at a put and at every renewal alike.
    /// The answer is the client's own: a refresh token (RFC 6749 section 4.4.3 says none should
    /// come) would make the credential depend on a session that can die, and an id token or
    /// subject would name a person, so only the access token and its lifetime are kept. A
    /// refusal is the instance's: no person's grant died, so nothing a new sign-in would mend, and
    /// `invalid_grant` is recorded as a misconfiguration, probed slowly, never `needs_reauth`.
    func obtain(_ request: GrantRequest, at provider: any TokenProvider) async throws(ProviderFailure) -> TokenPayload {
        var payload: TokenPayload
        do throws(ProviderFailure) {
            switch request.grant.type {
            case .clientCredentials:
                payload = try await provider.obtain(request)
            case .tokenExchange:
                let subject = try await subjectToken(of: request.grant, for: request.credentialID)
                payload = try await provider.exchangeToken(
                    request.grant.exchange, subjectToken: subject, for: request.credentialID)
                // A server answering with the subject itself would store the subject's token under
                // another credential, with other permissions.
                guard payload.secrets.accessToken != subject else {
                    throw ProviderFailure(
                        kind: .misconfigured, code: .malformedResponse,
                        message: "the token endpoint answered the subject token itself; it is not stored")
                }
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

    /// The access token a token exchange grant exchanges: its subject credential's current one,
    /// refreshed first when it has less than a minute left. A subject with none to give (removed,
    /// expired, waiting for a sign-in) fails the grant as `subject_unavailable`: nothing is sent,
    /// it says nothing of the provider, and the grant is tried again as the subject may recover.
    func subjectToken(of grant: CredentialGrant, for id: CredentialID) async throws(ProviderFailure) -> SecretBytes {
        func unavailable(_ why: String) -> ProviderFailure {
            ProviderFailure(
                kind: .transient, code: .subjectUnavailable,
                message: "the subject credential \(grant.subject?.description ?? "(none)") \(why); nothing was sent")
        }
        guard let subject = grant.subject, subject != id else { throw unavailable("is not another credential") }
        do {
            var metadata = try await vault.metadata(subject)
            if metadata.isRenewable, metadata.expiresAt.map({ $0 < vault.clock.now.adding(seconds: 60) }) ?? false {
                if case .refreshed(let refreshed) = try await refreshOnDemand(subject, minimumTTL: 60) {
                    metadata = refreshed
                }
            }
            guard metadata.status == .active || metadata.status == .failing else {
                throw unavailable("is \(metadata.status.rawValue)")
            }
            if let expiresAt = metadata.expiresAt, expiresAt <= vault.clock.now {
                throw unavailable("holds an expired access token")
            }
            return try await vault.credential(subject, opening: [.accessToken]).secrets.accessToken
        } catch let failure as ProviderFailure {
            throw failure
        } catch let error as VaultError where error.code == .credentialNotFound {
            throw unavailable("does not exist")
        } catch {
            throw unavailable("cannot be read: \(error)")
        }
    }
}
