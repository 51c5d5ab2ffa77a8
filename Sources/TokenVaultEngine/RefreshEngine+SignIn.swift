import TokenVaultCore
import TokenVaultLedger

/// Sign-ins the vault starts and finishes itself: it makes the state, PKCE verifier and nonce,
/// keeps them sealed in the store until the redirect comes back, and redeems the code through
/// `redeem`, the same crash-safe path as a code exchange, into the credential the sign-in was
/// started for.
extension RefreshEngine {
    public func startSignIn(_ start: SignInStart) async throws -> StartedSignIn {
        // Only the uid that started a sign-in finishes it: one without a uid could be finished by anyone.
        guard let uid = start.audit.uid else {
            throw VaultError(code: .forbidden, message: "a sign-in needs a caller with a uid")
        }
        return try await withSignInProvider(start.provider) { provider in
            if start.mode == .device { return try await startDeviceSignIn(start, uid: uid, provider: provider) }
            guard let redirectURI = start.redirectURI else {
                throw VaultError.invalidField("redirect_uri", "is required but for mode device")
            }
            return try await startSignIn(
                start, redirectURI: redirectURI, uid: uid, provider: provider,
                server: try await provider.authorizationServer())
        }
    }

    private func startSignIn(
        _ start: SignInStart, redirectURI: String, uid: UInt32, provider: any SignInProvider,
        server: AuthorizationServer
    ) async throws -> StartedSignIn {
        guard RedirectURIRule.admits(redirectURI, registered: server.redirectURIs) else {
            throw VaultError(
                code: .redirectURINotAllowed,
                message: "redirect_uri is not one of the redirect_uris of provider '\(start.provider)'")
        }
        for name in start.extra.keys.sorted() where !server.extraParameters.contains(name) {
            throw VaultError.invalidField(
                "parameters.\(name)", "is not one of the authorization_parameters of provider '\(start.provider)'")
        }
        let secrets = vault.makeSignInSecrets()
        let now = vault.clock.now
        // Always a nonce: a server that sends an id token unasked gets it bound too (it is checked
        // whenever one comes back, and required only when `openid` was asked for).
        let nonce = secrets.nonce
        let request = AuthorizationRequest(
            clientID: server.clientID, redirectURI: redirectURI, scopes: start.scopes,
            state: secrets.state.revealString(), codeChallenge: secrets.codeChallenge, nonce: nonce,
            loginHint: start.loginHint, prompt: start.prompt, resources: start.resources, extra: start.extra)
        let pending = PendingAuthorization(
            credentialID: start.credentialID, provider: start.provider, redirectURI: redirectURI,
            scopes: start.scopes, codeVerifier: secrets.codeVerifier, nonce: nonce, labels: start.labels,
            uid: uid, gid: start.audit.gid, createdAt: now,
            expiresAt: now.adding(seconds: options.signIn.expirySeconds))
        guard
            try await vault.keepAuthorization(
                pending, state: secrets.state, limit: options.signIn.maximumPendingPerUID)
        else { throw tooManySignIns }
        switch start.mode {
        case .parameters:
            return StartedSignIn(
                authorizationURL: nil, parameters: request.parameters, expiresAt: pending.expiresAt, pushed: false)
        case .device: preconditionFailure("device sign-ins start in startDeviceSignIn")
        case .url:
            guard server.pushedAuthorizationRequestEndpoint != nil else {
                return StartedSignIn(
                    authorizationURL: request.url(endpoint: server.authorizationEndpoint), parameters: nil,
                    expiresAt: pending.expiresAt, pushed: false)
            }
            do {
                let pushed = try await provider.pushAuthorizationRequest(request.parameters)
                return StartedSignIn(
                    authorizationURL: request.url(endpoint: server.authorizationEndpoint, pushed: pushed),
                    parameters: nil, expiresAt: pending.expiresAt, pushed: true)
            } catch {
                // Nobody will finish it: the caller never saw a URL.
                _ = try? await vault.takeAuthorization(state: secrets.state)
                throw error
            }
        }
    }

    public func finishSignIn(_ finish: SignInFinish) async throws -> RedeemedCode {
        let callback = finish.callback
        guard let pending = try await vault.takeAuthorization(state: callback.state) else {
            throw VaultError(
                code: .authorizationUnknown,
                message: "no sign-in waits under this state: it was never started, was finished already, or "
                    + "expired and was pruned")
        }
        // The state is spent from here on, whatever follows: a second try needs a new sign-in.
        guard pending.credentialID == finish.credentialID else {
            throw VaultError(
                code: .authorizationMismatch,
                message: "this sign-in was started for another credential, not \(finish.credentialID)")
        }
        guard pending.uid == finish.audit.uid else {
            throw VaultError(code: .authorizationMismatch, message: "this sign-in was started by another caller")
        }
        guard vault.clock.now < pending.expiresAt else {
            throw VaultError(
                code: .authorizationExpired, message: "this sign-in expired at \(pending.expiresAt); start a new one")
        }
        let server = try await withSignInProvider(pending.provider) { try await $0.authorizationServer() }
        // RFC 9207 section 2.4: checked before anything else the response says, errors included.
        if let issuer = callback.issuer {
            guard let expected = server.issuer, issuer == expected else {
                throw VaultError(
                    code: .issuerMismatch,
                    message: server.issuer.map { "the callback's iss is not \($0)" }
                        ?? "the callback carries iss, but provider '\(pending.provider)' has no issuer to compare "
                        + "it with (configure issuer)")
            }
        } else if server.sendsIssuer {
            throw VaultError(
                code: .issuerMismatch,
                message: "the callback carries no iss, though \(server.issuer ?? "the server") says it always sends it")
        }
        let code: SecretBytes
        switch callback.outcome {
        case .error(let error, let description):
            throw VaultError(
                code: .authorizationDenied,
                message: "the authorization server answered \(error)" + (description.map { ": \($0)" } ?? ""))
        case .code(let received): code = received
        }
        // A caller that may not replace the credential's account repairs it only with the same one:
        // both subjects must be known and equal (an empty one matches nothing).
        var subject: String?
        if finish.keepsSubject {
            do {
                subject = try await vault.metadata(finish.credentialID).subject ?? ""
            } catch let error as VaultError where error.code == .credentialNotFound {
                subject = nil
            }
        }
        return try await redeem(
            CodeRedemption(
                provider: pending.provider,
                request: CodeExchangeRequest(
                    code: code, codeVerifier: pending.codeVerifier, redirectURI: pending.redirectURI,
                    credentialID: finish.credentialID),
                nonce: pending.nonce, issuer: server.issuer,
                idTokenRequired: AuthorizationRequest.asksForIDToken(pending.scopes), requestedScopes: pending.scopes,
                expectedSubject: subject,
                // Nil keeps a repaired credential's labels, read in the write's own transaction.
                labels: pending.labels, audit: finish.audit))
    }

    /// Asks the device authorization endpoint for the codes, and keeps the device code sealed
    /// for the poller (`RefreshEngine+DeviceGrant.swift`), which redeems it once the person has
    /// approved.
    private func startDeviceSignIn(_ start: SignInStart, uid: UInt32, provider: any SignInProvider) async throws
        -> StartedSignIn
    {
        // Before the server issues codes a caller over the limit could not use.
        guard try await vault.waitingSignIns(uid: uid) < options.signIn.maximumPendingPerUID else {
            throw tooManySignIns
        }
        let granted = try await provider.requestDeviceAuthorization(scopes: start.scopes, extra: start.extra)
        let expiresAt = vault.clock.now.adding(
            seconds: min(max(granted.expiresIn, 1), options.signIn.maximumDeviceSeconds))
        guard
            try await vault.keepDeviceAuthorization(
                credentialID: start.credentialID, provider: start.provider, deviceCode: granted.deviceCode,
                scopes: start.scopes, labels: start.labels, uid: uid, gid: start.audit.gid,
                keepsSubject: start.keepsSubject, issuer: granted.issuer, interval: granted.userCode.interval,
                expiresAt: expiresAt, limit: options.signIn.maximumPendingPerUID)
        else { throw tooManySignIns }
        wakeDevicePoller()
        return StartedSignIn(
            authorizationURL: nil, parameters: nil, expiresAt: expiresAt, pushed: false, device: granted.userCode)
    }

    private var tooManySignIns: VaultError {
        VaultError(
            code: .tooManyAuthorizations,
            message: "this caller has \(options.signIn.maximumPendingPerUID) sign-ins waiting already "
                + "(sign_in.max_pending_per_uid); finish them or let them expire")
    }

    /// Runs `body` with the instance's provider, if its kind can start sign-ins, inside the
    /// instance's slot (a reload waits for it).
    func withSignInProvider<Result: Sendable>(
        _ name: String, _ body: (any SignInProvider) async throws -> Result
    ) async throws -> Result {
        let slot = enterSlot(name)
        defer { slot?.leave() }
        guard let slot, let provider = slot.provider else {
            throw ProviderFailure.notConfigured(name, listed: slot != nil)
        }
        guard let signIn = provider as? any SignInProvider else {
            throw ProviderFailure(
                kind: .misconfigured, code: .providerNotConfigured,
                message: "provider '\(name)' is of a kind that cannot start sign-ins")
        }
        return try await body(signIn)
    }
}
