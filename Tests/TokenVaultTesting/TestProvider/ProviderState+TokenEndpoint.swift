import Foundation

/// The token endpoint: refresh (RFC 6749 6, with rotation and reuse detection per RFC 9700
/// 4.14) and code exchange (RFC 6749 4.1.3 with PKCE, RFC 7636).
extension ProviderState {
    mutating func tokenEndpoint(_ request: RecordedRequest) -> HTTPReply {
        if let refusal = precheck(request) { return refusal }
        var key: String?
        if let verifier = options.dpop {
            switch verifier.check(
                proof: request.headers["dpop"], method: "POST", url: issuer + options.tokenPath, accessToken: nil)
            {
            case .nonceRequired(let nonce):
                return error(400, "use_dpop_nonce", "a DPoP nonce is required", headers: [("DPoP-Nonce", nonce)])
            case .refused(let reason): return error(400, "invalid_dpop_proof", reason)
            case .accepted(let thumbprint): key = thumbprint
            }
        }
        switch request.form["grant_type"] {
        case "refresh_token": return refreshGrant(request, key: key)
        case "authorization_code": return codeGrant(request, key: key)
        case nil, "": return error(400, "invalid_request", "grant_type is required")
        case let other?: return error(400, "unsupported_grant_type", "grant_type \(other) is not supported")
        }
    }

    /// `key`: the DPoP key the request proved (RFC 9449 section 5): the tokens issued are bound to
    /// it, and a refresh token bound to one key is refused with another (before it is spent).
    private mutating func refreshGrant(_ request: RecordedRequest, key: String?) -> HTTPReply {
        guard let token = request.form["refresh_token"], !token.isEmpty else {
            return error(400, "invalid_request", "refresh_token is required")
        }
        if let bound = dpopBindings[token], bound != key {
            return error(400, "invalid_grant", "the refresh token is bound to another DPoP key")
        }
        let policy = TokenLedger.Policy(
            accessLifetime: options.accessTokenLifetime, refreshLifetime: options.refreshTokenLifetime,
            rotate: options.rotateRefreshTokens, graceWindow: options.graceWindow,
            reuseDetection: options.reuseDetection)
        switch ledger.refresh(token, policy: policy, now: now) {
        case .minted(let minted):
            counters.successfulRefreshes += 1
            let returned = minted.rotated || !options.omitRefreshTokenInResponse ? minted.refreshToken : nil
            return tokenResponse(
                accessToken: minted.accessToken, refreshToken: returned, familyID: minted.familyID, request: request,
                key: key)
        case .unknown:
            return error(400, "invalid_grant", "unknown refresh token")
        case .expired:
            return error(400, "invalid_grant", "the refresh token has expired")
        case .familyRevoked:
            return error(400, "invalid_grant", "the refresh token has been revoked")
        case .reused(let revokedFamily):
            if revokedFamily { counters.revokedFamilies += 1 }
            return error(400, "invalid_grant", "the refresh token was already used")
        }
    }

    private mutating func codeGrant(_ request: RecordedRequest, key: String?) -> HTTPReply {
        guard let code = request.form["code"], !code.isEmpty else {
            return error(400, "invalid_request", "code is required")
        }
        let outcome = ledger.exchange(
            code: code, redirectURI: request.form["redirect_uri"], verifier: request.form["code_verifier"],
            revokeOnReplay: options.reuseDetection, accessLifetime: options.accessTokenLifetime,
            refreshLifetime: options.refreshTokenLifetime, now: now)
        switch outcome {
        case .issued(let issued):
            counters.successfulCodeExchanges += 1
            return tokenResponse(
                accessToken: issued.accessToken, refreshToken: issued.refreshToken, familyID: issued.familyID,
                request: request, key: key)
        case .rejected(let reason):
            return error(400, "invalid_grant", reason)
        case .replayed(let revokedFamily):
            if revokedFamily { counters.revokedFamilies += 1 }
            return error(400, "invalid_grant", "the authorization code was already used")
        }
    }

    /// A successful answer, spelled as the options say; its tokens bound to `key` when given.
    private mutating func tokenResponse(
        accessToken: String, refreshToken: String?, familyID: String, request: RecordedRequest, key: String?
    ) -> HTTPReply {
        let lifetime = options.accessTokenLifetime
        if let key {
            dpopBindings[accessToken] = key
            if let refreshToken { dpopBindings[refreshToken] = key }
        }
        var fields: [(String, JSONText)] = [
            ("access_token", .string(accessToken)), ("token_type", .string(key == nil ? "Bearer" : "DPoP")),
        ]
        switch options.expiresInFormat {
        case .integer: fields.append(("expires_in", .integer(Int(lifetime.rounded(.down)))))
        case .string: fields.append(("expires_in", .string(String(Int(lifetime.rounded(.down))))))
        case .float: fields.append(("expires_in", .float(lifetime)))
        case .absent: break
        case .zero: fields.append(("expires_in", .integer(0)))
        }
        if let refreshToken { fields.append(("refresh_token", .string(refreshToken))) }
        let family = ledger.families[familyID]
        if let scopes = family?.scopes, !scopes.isEmpty {
            switch options.scopeFormat {
            case .string: fields.append(("scope", .string(scopes.joined(separator: " "))))
            case .array: fields.append(("scope", .array(scopes.map { .string($0) })))
            case .absent: break
            }
        }
        if options.includeIDToken, let family {
            let issuedAt = Int(now.timeIntervalSince1970)
            var claims: [(String, JSONText)] = [
                ("iss", .string(issuer)), ("sub", .string(family.subject)), ("aud", .string(options.clientID)),
                ("exp", .integer(issuedAt + Int(lifetime.rounded(.up)))), ("iat", .integer(issuedAt)),
            ]
            if let nonce = family.nonce { claims.append(("nonce", .string(nonce))) }
            fields.append(("id_token", .string(UnsignedJWT.make(claims))))
        }
        if options.echoState, let state = request.form["state"] { fields.append(("state", .string(state))) }
        return .json(200, .object(fields))
    }
}
