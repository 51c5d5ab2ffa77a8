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
            payload = try await provider.obtain(request)
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
}
