/// An identity provider's token endpoint, as the refresh engine sees it. Implemented per
/// provider kind by TokenVaultProviders; the engine only knows this protocol.
///
/// Every failure is thrown as a `ProviderFailure`, already classified, so the engine's
/// decisions (re-authorise, pause the provider, back off, retry with the same token) never
/// depend on one provider's wire format.
public protocol TokenProvider: Sendable {
    /// The provider instance name credentials refer to (`provider` in the API).
    var name: String { get }

    /// Exchanges `request.refreshToken` for new tokens. The payload's relative times count from
    /// the moment the request was sent; the caller takes that moment before calling.
    func refresh(_ request: RefreshRequest) async throws(ProviderFailure) -> TokenPayload

    /// Whether the provider has a revocation endpoint (RFC 7009). Without one, deleting a
    /// credential only removes it locally.
    var supportsRevocation: Bool { get }

    /// Revokes one token (RFC 7009). Succeeds for tokens the provider does not know. `call`: the
    /// key its answer is kept under until settled (nil: none).
    func revoke(_ token: SecretBytes, hint: TokenHint, call: ProviderCall?) async throws(ProviderFailure)

    /// The client id requests are made with: an id token's `aud` must contain it.
    var clientID: String? { get }

    /// Redeems an authorization code with its PKCE verifier (RFC 6749 section 4.1.3, RFC 7636)
    /// for a first token set. A refused code (`invalid_grant`: replayed, expired, wrong
    /// verifier) is thrown as the provider said it.
    func exchange(_ request: CodeExchangeRequest) async throws(ProviderFailure) -> TokenPayload

    /// RFC 8693 token exchange of `subjectToken` (`TokenExchange.swift`; refused by default).
    func exchangeToken(_ request: TokenExchangeRequest, subjectToken: SecretBytes, for credential: CredentialID)
        async throws(ProviderFailure) -> TokenPayload

    /// New tokens by a client credentials grant (`CredentialGrant.swift`; refused by default). A
    /// token exchange grant is made with `exchangeToken`.
    func obtain(_ request: GrantRequest) async throws(ProviderFailure) -> TokenPayload
}

/// What a server-side code exchange sends: the one-time code the mobile SDK handed the app,
/// the PKCE verifier that goes with it, and the redirect URI the code was issued for.
public struct CodeExchangeRequest: Sendable {
    /// The authorization code, or a device grant's device code (`grant`).
    public var code: SecretBytes
    public var codeVerifier: SecretBytes?
    public var redirectURI: String
    /// The authorization response's `state`, for kinds whose token endpoint wants it (ESIA).
    public var state: String?
    /// The credential the result will be stored as (for logs and signers; never sent).
    public var credentialID: CredentialID
    /// The key the answer is kept under until the engine settles it (nil: none).
    public var call: ProviderCall?
    public var grant: CodeGrant

    public init(
        code: SecretBytes, codeVerifier: SecretBytes?, redirectURI: String, state: String? = nil,
        credentialID: CredentialID, call: ProviderCall? = nil, grant: CodeGrant = .authorizationCode
    ) {
        self.grant = grant
        self.code = code
        self.codeVerifier = codeVerifier
        self.redirectURI = redirectURI
        self.state = state
        self.credentialID = credentialID
        self.call = call
    }
}

/// What a refresh sends: the refresh token and the scopes the credential holds.
public struct RefreshRequest: Sendable {
    public var credentialID: CredentialID
    public var refreshToken: SecretBytes
    public var scopes: [String]
    /// The key the answer is kept under until the engine settles it (nil: none).
    public var call: ProviderCall?

    public init(credentialID: CredentialID, refreshToken: SecretBytes, scopes: [String] = [], call: ProviderCall? = nil)
    {
        self.credentialID = credentialID
        self.refreshToken = refreshToken
        self.scopes = scopes
        self.call = call
    }
}

/// What the engine asks a provider for when it obtains or renews a credential by its grant.
public struct GrantRequest: Sendable {
    /// The credential the tokens are for (for logs and signers; never sent).
    public var credentialID: CredentialID
    public var grant: CredentialGrant
    /// A token exchange grant's subject token, read by the engine from the subject credential.
    public var subjectToken: SecretBytes?
    /// The key the answer is kept under until the engine settles it (nil: none).
    public var call: ProviderCall?

    public init(
        credentialID: CredentialID, grant: CredentialGrant, subjectToken: SecretBytes? = nil, call: ProviderCall? = nil
    ) {
        self.credentialID = credentialID
        self.grant = grant
        self.subjectToken = subjectToken
        self.call = call
    }
}

/// RFC 7009 `token_type_hint`.
public enum TokenHint: String, Sendable {
    case accessToken = "access_token"
    case refreshToken = "refresh_token"
}
