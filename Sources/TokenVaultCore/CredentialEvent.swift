/// A change to a credential, as the watch and event streams report it. Never a token.
public struct CredentialEvent: Sendable, Equatable {
    public enum Kind: String, Sendable, Codable {
        /// Stored through the API (new or replaced tokens).
        case stored
        /// New tokens from the provider (generation + 1).
        case refreshed
        /// A refresh failed transiently; the current token is still served while valid.
        case failing
        /// The provider rejected the grant; a person must sign in again.
        case needsReauth = "needs_reauth"
        /// Deletion asked for; revocation at the provider not yet confirmed.
        case revokePending = "revoke_pending"
        /// Past expiry with no way to refresh.
        case expired
        case deleted
        /// A device sign-in ended with tokens stored (after their own `stored`).
        case authorized
        /// A device sign-in ended without tokens: the person refused, the code expired, or the
        /// answer was refused. `reason` says which; `metadata` is nil when no credential exists.
        case authorizationFailed = "authorization_failed"
    }

    public var kind: Kind
    public var id: CredentialID
    public var at: Timestamp
    /// The credential after the change (for `deleted`, its last state).
    public var metadata: CredentialMetadata?
    /// Why a sign-in failed (`access_denied`, `expired_token`, …), for `authorizationFailed`.
    public var reason: String?

    public init(kind: Kind, id: CredentialID, at: Timestamp, metadata: CredentialMetadata?, reason: String? = nil) {
        self.kind = kind
        self.id = id
        self.at = at
        self.metadata = metadata
        self.reason = reason
    }
}
