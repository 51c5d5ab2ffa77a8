/// A sign-in the vault started and has not finished: what it must remember until the
/// authorization server's redirect comes back. The `state` itself is never kept: the row is found
/// by the state's fingerprint, and the PKCE verifier is sealed (`SealedAuthorization`).
public struct PendingAuthorization: Sendable {
    /// The credential the sign-in finishes into, and only that one.
    public var credentialID: CredentialID
    public var provider: String
    public var redirectURI: String
    public var scopes: [String]
    /// PKCE's code verifier (RFC 7636): sent once, with the code, to the token endpoint.
    public var codeVerifier: SecretBytes
    /// The nonce the id token must carry (OpenID Connect); nil when no id token was asked for.
    public var nonce: String?
    /// Labels for the credential; nil keeps those of a credential being repaired.
    public var labels: [String: String]?
    /// Who started it: only the same uid can finish it.
    public var uid: UInt32
    public var gid: UInt32?
    public var createdAt: Timestamp
    public var expiresAt: Timestamp

    public init(
        credentialID: CredentialID, provider: String, redirectURI: String, scopes: [String], codeVerifier: SecretBytes,
        nonce: String?, labels: [String: String]?, uid: UInt32, gid: UInt32?, createdAt: Timestamp,
        expiresAt: Timestamp
    ) {
        self.credentialID = credentialID
        self.provider = provider
        self.redirectURI = redirectURI
        self.scopes = scopes
        self.codeVerifier = codeVerifier
        self.nonce = nonce
        self.labels = labels
        self.uid = uid
        self.gid = gid
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// A pending sign-in as the store keeps it: found by `key` (the state's fingerprint), capped and
/// pruned by `uid` and `expiresAt`; the verifier and the other details are sealed under
/// `sealTerm`, which rotation keeps while the row lives.
public struct SealedAuthorization: Sendable, Equatable {
    public var key: String
    public var credentialID: CredentialID
    public var provider: String
    public var uid: UInt32
    public var createdAt: Timestamp
    public var expiresAt: Timestamp
    public var sealTerm: UInt32
    /// The PKCE verifier, sealed.
    public var secret: [UInt8]
    /// `AuthorizationDetails` as JSON, sealed (the nonce is in it).
    public var details: [UInt8]

    public init(
        key: String, credentialID: CredentialID, provider: String, uid: UInt32, createdAt: Timestamp,
        expiresAt: Timestamp, sealTerm: UInt32, secret: [UInt8], details: [UInt8]
    ) {
        self.key = key
        self.credentialID = credentialID
        self.provider = provider
        self.uid = uid
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.sealTerm = sealTerm
        self.secret = secret
        self.details = details
    }
}

/// The parts of a pending sign-in that are not columns of its row, sealed together.
public struct AuthorizationDetails: Codable, Sendable, Equatable {
    public var redirectURI: String
    public var scopes: [String]
    public var nonce: String?
    public var labels: [String: String]?
    public var gid: UInt32?

    public init(redirectURI: String, scopes: [String], nonce: String?, labels: [String: String]?, gid: UInt32?) {
        self.redirectURI = redirectURI
        self.scopes = scopes
        self.nonce = nonce
        self.labels = labels
        self.gid = gid
    }
}

/// Where pending sign-ins are kept (both databases; `migrations/0008_authorizations.sql`).
public protocol AuthorizationStore: Sendable {
    /// Removes every row expired at `now`, then adds `row` unless its caller has `limit` rows
    /// already (false then). Durable: a sign-in the caller was told of survives a crash.
    func addAuthorization(_ row: SealedAuthorization, limit: Int, now: Timestamp) async throws -> Bool
    /// Removes and returns the row under `key`, expired or not (the caller says which): a
    /// sign-in is finished at most once.
    func takeAuthorization(key: String) async throws -> SealedAuthorization?
}
