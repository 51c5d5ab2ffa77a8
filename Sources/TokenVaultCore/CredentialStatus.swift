/// Where a credential stands. Stored in `credentials.status` (the schema CHECKs these values),
/// except `pendingAuthorization`, which is only shown.
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
    /// Never stored: what a credential shows while a device sign-in into it waits for the
    /// person, when it has no tokens to serve (none yet, or `needs_reauth` or `expired` ones).
    case pendingAuthorization = "pending_authorization"

    /// The statuses a row can hold (a listing's filter, the counts of `tokenvault status`).
    public static let stored: [CredentialStatus] = [.active, .failing, .needsReauth, .revokePending, .expired]

    /// A stored status whose tokens can be neither served nor refreshed: a device sign-in into
    /// such a credential shows it as `pendingAuthorization` while the sign-in waits.
    public var awaitsSignIn: Bool { self == .needsReauth || self == .expired }
}

/// What kind of secret a credential holds.
public enum CredentialKind: String, Sendable, Codable, CaseIterable {
    /// An OAuth 2.0 / OIDC token response; renewable when it has a refresh token or a grant.
    case oauth2
    /// A one-shot token that can be neither refreshed nor revoked (EBS `verify_token`).
    case verifyToken = "verify_token"
}
