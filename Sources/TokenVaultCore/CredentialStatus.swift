/// Where a credential stands. Stored in `credentials.status` (the schema CHECKs these values).
public enum CredentialStatus: String, Sendable, Codable, CaseIterable {
    /// Usable; refreshed on schedule when it can be.
    case active
    /// Refreshes are failing transiently; the current token is served until it expires.
    case failing
    /// The provider rejected the refresh token (`invalid_grant`); a person must sign in again.
    case needsReauth = "needs_reauth"
    /// Deletion asked for, revocation at the provider not yet confirmed.
    case revokePending = "revoke_pending"
    /// Past its expiry with no way to refresh.
    case expired
}

/// What kind of secret a credential holds.
public enum CredentialKind: String, Sendable, Codable, CaseIterable {
    /// An OAuth 2.0 / OIDC token response; refreshable when it has a refresh token.
    case oauth2
    /// A one-shot token that can be neither refreshed nor revoked (EBS `verify_token`).
    case verifyToken = "verify_token"
}
