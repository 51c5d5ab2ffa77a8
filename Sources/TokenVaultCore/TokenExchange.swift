/// An RFC 8693 token exchange the vault makes for a caller: a token derived from a stored
/// credential's access token (the subject, which never reaches the caller), for another
/// `audience` or `resource`, a narrower `scope`, or another token type. The derived token is the
/// caller's; the credential is left as it is.
public struct TokenExchangeRequest: Sendable, Hashable {
    /// The subject token's type (RFC 8693 section 3).
    public static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"

    public var audiences: [String]
    public var resources: [String]
    public var scopes: [String]
    /// `requested_token_type`; nil: the server's choice (an access token, usually).
    public var requestedTokenType: String?

    public init(
        audiences: [String] = [], resources: [String] = [], scopes: [String] = [], requestedTokenType: String? = nil
    ) {
        self.audiences = audiences
        self.resources = resources
        self.scopes = scopes
        self.requestedTokenType = requestedTokenType
    }

    /// The same request with its lists as sorted sets: what is sent, and what derived tokens are
    /// cached under.
    public var canonical: TokenExchangeRequest {
        TokenExchangeRequest(
            audiences: Set(audiences).sorted(), resources: Set(resources).sorted(), scopes: Set(scopes).sorted(),
            requestedTokenType: requestedTokenType)
    }
}

/// A token derived by `TokenExchangeRequest`, as the caller gets it.
public struct DerivedToken: Sendable {
    public var accessToken: SecretBytes
    public var tokenType: String
    /// `issued_token_type` (RFC 8693 section 2.2.1).
    public var issuedTokenType: String?
    public var expiresAt: Timestamp?
    public var scopes: [String]

    public init(
        accessToken: SecretBytes, tokenType: String, issuedTokenType: String?, expiresAt: Timestamp?, scopes: [String]
    ) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.issuedTokenType = issuedTokenType
        self.expiresAt = expiresAt
        self.scopes = scopes
    }
}

/// What the engine needs to derive a token for a caller: the credential (its id and provider, and
/// its creation and generation, which the cache is keyed by), the subject token opened from it,
/// and the request.
public struct TokenExchange: Sendable {
    public var credential: CredentialID
    public var provider: String
    public var createdAt: Timestamp
    public var generation: Int64
    public var subjectToken: SecretBytes
    public var request: TokenExchangeRequest

    public init(
        credential: CredentialID, provider: String, createdAt: Timestamp, generation: Int64, subjectToken: SecretBytes,
        request: TokenExchangeRequest
    ) {
        self.credential = credential
        self.provider = provider
        self.createdAt = createdAt
        self.generation = generation
        self.subjectToken = subjectToken
        self.request = request
    }
}

extension TokenProvider {
    /// RFC 8693 at the provider's token endpoint; a kind without it refuses.
    public func exchangeToken(_ request: TokenExchangeRequest, subjectToken: SecretBytes, for credential: CredentialID)
        async throws(ProviderFailure) -> TokenPayload
    {
        throw ProviderFailure(
            kind: .misconfigured, code: .tokenExchangeNotSupported,
            message: "provider instance \(name) cannot exchange tokens (RFC 8693 is an oauth2 instance's)")
    }
}
