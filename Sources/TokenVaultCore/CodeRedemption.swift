/// A server-side code exchange, whole: the code to redeem at a provider instance, the id token's
/// expected nonce, and how to store the result (credential, labels, the audit row). The engine
/// redeems it, checks the id token and stores it through the ledger, the same way whether the
/// answer just arrived or was recovered from the courier's spool after a crash.
public struct CodeRedemption: Sendable {
    public var provider: String
    public var request: CodeExchangeRequest
    public var nonce: String?
    /// The issuer the id token must name (a sign-in the vault started); nil: not checked.
    public var issuer: String?
    /// Whether an id token must come back when a nonce was given (a sign-in that did not ask for
    /// `openid` binds one by its nonce only if the server sends one).
    public var idTokenRequired: Bool
    /// The scopes asked for: the credential's when the answer names none (RFC 6749 section 5.1).
    public var requestedScopes: [String]
    /// The subject the new tokens must be for (a repair by a caller that may not replace the
    /// credential's account); nil: any.
    public var expectedSubject: String?
    /// The credential's labels; nil keeps those of the credential being replaced.
    public var labels: [String: String]?
    /// The row written with the credential (`credential.exchange`, allowed).
    public var audit: AuditEvent
    /// The device grant this redeems (its row's key): ended once the tokens are stored.
    public var deviceGrantKey: String?

    public init(
        provider: String, request: CodeExchangeRequest, nonce: String?, issuer: String? = nil,
        idTokenRequired: Bool = true, requestedScopes: [String] = [], expectedSubject: String? = nil,
        labels: [String: String]?, audit: AuditEvent, deviceGrantKey: String? = nil
    ) {
        self.deviceGrantKey = deviceGrantKey
        self.provider = provider
        self.request = request
        self.nonce = nonce
        self.issuer = issuer
        self.idTokenRequired = idTokenRequired
        self.requestedScopes = requestedScopes
        self.expectedSubject = expectedSubject
        self.labels = labels
        self.audit = audit
    }
}

/// A redeemed code: the payload the provider issued and the ledger's write of it (committed, or
/// held until the database takes it).
public struct RedeemedCode: Sendable {
    public var payload: TokenPayload
    public var stored: HeldOrCommitted<CredentialMetadata>

    public init(payload: TokenPayload, stored: HeldOrCommitted<CredentialMetadata>) {
        self.payload = payload
        self.stored = stored
    }
}
