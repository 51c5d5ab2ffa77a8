/// A token payload as received, before it is timed and sealed: what a T-ID SDK, an RFC 6749
/// token endpoint or an EBS verification hands over.
public struct TokenPayload: Sendable {
    /// When the payload's relative times run out.
    public enum Expiry: Sendable, Equatable {
        /// No usable lifetime was given (missing, null or 0).
        case unknown
        /// Seconds from the moment the token was issued (`expires_in`).
        case after(seconds: Double)
        /// An absolute time (`expires_at`).
        case at(Timestamp)

        /// The absolute expiry for a token issued at `issuedAt`, if known.
        public func resolve(issuedAt: Timestamp) -> Timestamp? {
            switch self {
            case .unknown: nil
            case .after(let seconds): issuedAt.adding(seconds: seconds)
            case .at(let timestamp): timestamp
            }
        }
    }

    public var kind: CredentialKind
    public var secrets: CredentialSecrets
    public var tokenType: String?
    public var scopes: [String]
    public var expiry: Expiry
    public var refreshTokenExpiry: Expiry
    /// A server's hint for when to refresh (`refresh_in`, seconds), honoured by the planner.
    public var refreshIn: Double?
    /// The id token's `sub` claim, read (not verified) for display and lookup.
    public var subject: String?
    /// When the request this payload answers was sent, if not by this call: an answer the courier
    /// kept through a restart and handed back to the call with the same key. Relative lifetimes
    /// count from it. Nil: the caller's own send time.
    public var sentAt: Timestamp?
    /// Why the answer's id token was not accepted (its signature or claims, `IDTokenVerifier`):
    /// the id token and the subject read from it are removed, and the rest of the answer is kept,
    /// so a refresh never loses the new refresh token; the credential shows this as its
    /// `last_error`, and a sign-in is refused with it.
    public var idTokenRejection: VaultError?

    public init(
        kind: CredentialKind, secrets: CredentialSecrets, tokenType: String? = nil, scopes: [String] = [],
        expiry: Expiry = .unknown, refreshTokenExpiry: Expiry = .unknown, refreshIn: Double? = nil,
        subject: String? = nil
    ) {
        self.kind = kind
        self.secrets = secrets
        self.tokenType = tokenType
        self.scopes = scopes
        self.expiry = expiry
        self.refreshTokenExpiry = refreshTokenExpiry
        self.refreshIn = refreshIn
        self.subject = subject
    }
}
