/// The one rule for what a credential's next generation looks like, given the generation before
/// it (if any) and a token payload. Pure: `Vault` calls it for every put, code exchange, refresh
/// commit and bulk import, so the three kinds of write cannot drift apart.
public struct NextGeneration: Sendable {
    /// How the new tokens relate to the stored ones.
    public enum Succession: Sendable, Equatable {
        /// Tokens handed to the vault (`PUT`, a code exchange, an import) or obtained by a grant:
        /// the payload replaces every secret and every field it describes; provider, labels and
        /// grant are the caller's (a put of tokens leaves none).
        case replacement(provider: String, labels: [String: String], grant: CredentialGrant? = nil)
        /// Tokens from a refresh: whatever the answer leaves out (the refresh token, the id token,
        /// extras, token type, scopes, subject) is kept from the previous generation.
        case refresh
    }

    public var metadata: CredentialMetadata
    public var secrets: CredentialSecrets

    /// - Parameters:
    ///   - previous: the stored generation, with its secrets for a refresh (a replacement needs none).
    ///   - issuedAt: when the tokens were issued: the moment a refresh request was sent, or when a
    ///     put arrived (relative lifetimes count from here).
    ///   - now: the time of the write (`updated_at`).
    ///   - jitter: a uniform random number in [0, 1) for the planner's jitter.
    public init(
        previous: CredentialMetadata?, previousSecrets: CredentialSecrets? = nil, payload: TokenPayload,
        succession: Succession, id: CredentialID, issuedAt: Timestamp, now: Timestamp, planner: RefreshPlanner,
        jitter: Double
    ) {
        let expiresAt = payload.expiry.resolve(issuedAt: issuedAt)
        switch succession {
        case .replacement(let provider, let labels, let grant):
            secrets = payload.secrets
            let refreshTokenExpiresAt = payload.refreshTokenExpiry.resolve(issuedAt: issuedAt)
            var next = CredentialMetadata(
                id: id, provider: provider, kind: payload.kind, subject: payload.subject, status: .active,
                generation: (previous?.generation ?? 0) + 1, tokenType: payload.tokenType, scopes: payload.scopes,
                labels: labels, issuedAt: issuedAt, expiresAt: expiresAt,
                refreshTokenExpiresAt: refreshTokenExpiresAt, createdAt: previous?.createdAt ?? now, updatedAt: now,
                hasRefreshToken: payload.secrets.refreshToken != nil, hasIDToken: payload.secrets.idToken != nil,
                grant: grant)
            // A credential that cannot be renewed is acted on at its expiry instead (an EBS verify
            // token is purged, another one marked expired).
            next.refreshAt =
                planner.refreshAt(
                    issuedAt: issuedAt, expiresAt: expiresAt, refreshIn: payload.refreshIn,
                    canRefresh: next.isRenewable,
                    jitter: jitter, refreshTokenExpiresAt: refreshTokenExpiresAt) ?? expiresAt
            metadata = next
        case .refresh:
            var payload = payload
            // OpenID Connect Core section 12.2: a refreshed id token names the same subject. One
            // that names another says, in the server's own words, that these tokens are another
            // account's: they are kept (the refresh token was rotated) but not served, and the
            // credential needs a new sign-in.
            var anotherAccount = false
            if let subject = previous?.subject, let claimed = payload.subject, claimed != subject,
                payload.secrets.idToken != nil
            {
                anotherAccount = true
                payload.secrets.idToken = nil
                payload.subject = nil
                payload.idTokenRejection = VaultError(
                    code: .idTokenInvalid,
                    message: "the refreshed id token names another subject than the credential's: its tokens are not "
                        + "served until the person signs in again")
            }
            let kept = previousSecrets
            secrets = CredentialSecrets(
                accessToken: payload.secrets.accessToken,
                refreshToken: payload.secrets.refreshToken ?? kept?.refreshToken,
                idToken: payload.secrets.idToken ?? kept?.idToken, extras: payload.secrets.extras ?? kept?.extras)
            var next =
                previous
                ?? CredentialMetadata(
                    id: id, provider: "", kind: payload.kind, generation: 0, issuedAt: issuedAt, createdAt: now,
                    updatedAt: now, hasRefreshToken: false, hasIDToken: false)
            next.generation += 1
            next.status = anotherAccount ? .needsReauth : .active
            next.tokenType = payload.tokenType ?? next.tokenType
            if !payload.scopes.isEmpty { next.scopes = payload.scopes }
            next.subject = payload.subject ?? next.subject
            next.issuedAt = issuedAt
            next.expiresAt = expiresAt
            if payload.secrets.refreshToken != nil {
                next.refreshTokenExpiresAt = payload.refreshTokenExpiry.resolve(issuedAt: issuedAt)
            }
            next.hasRefreshToken = secrets.refreshToken != nil
            next.hasIDToken = secrets.idToken != nil
            next.refreshAt =
                anotherAccount
                ? nil
                : planner.refreshAt(
                    issuedAt: issuedAt, expiresAt: expiresAt, refreshIn: payload.refreshIn,
                    canRefresh: next.isRenewable, jitter: jitter,
                    refreshTokenExpiresAt: next.refreshTokenExpiresAt) ?? expiresAt
            next.lastError = payload.idTokenRejection.map {
                CredentialFailure(code: $0.code.rawValue, message: $0.message, at: now)
            }
            next.refreshFailures = 0
            next.updatedAt = now
            metadata = next
        }
    }
}
