/// An RFC 8693 token exchange the vault makes for a caller: a token derived from a stored
/// credential's (its access token, or its refresh token where the server wants that, which never
/// leaves the vault), for another `audience` or `resource`, a narrower `scope`, or another token
/// type. The derived token is the caller's; the credential is left as it is.
public struct TokenExchangeRequest: Sendable, Hashable {
    /// Which of the credential's tokens is the subject token (RFC 8693 section 3).
    public enum SubjectTokenType: String, Sendable, CaseIterable {
        case accessToken = "urn:ietf:params:oauth:token-type:access_token"
        case refreshToken = "urn:ietf:params:oauth:token-type:refresh_token"
    }

    public var audiences: [String]
    public var resources: [String]
    public var scopes: [String]
    /// `requested_token_type`; nil: the server's choice (an access token, usually).
    public var requestedTokenType: String?
    public var subjectTokenType: SubjectTokenType

    public init(
        audiences: [String] = [], resources: [String] = [], scopes: [String] = [], requestedTokenType: String? = nil,
        subjectTokenType: SubjectTokenType = .accessToken
    ) {
        self.audiences = audiences
        self.resources = resources
        self.scopes = scopes
        self.requestedTokenType = requestedTokenType
        self.subjectTokenType = subjectTokenType
    }

    /// The same request in any order of its lists: what derived tokens are cached under.
    public var canonical: TokenExchangeRequest {
        TokenExchangeRequest(
            audiences: audiences.sorted(), resources: resources.sorted(), scopes: scopes.sorted(),
            requestedTokenType: requestedTokenType, subjectTokenType: subjectTokenType)
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
