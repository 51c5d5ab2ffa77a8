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
    /// Spelled as the `kind` column.
    public enum Kind: String, Sendable {
        /// Finished by the redirect's callback; `key` is the state's fingerprint.
        case authorizationCode = "authorization_code"
        /// Polled by the daemon; `key` is the device code's fingerprint.
        case deviceCode = "device_code"
    }

    public var key: String
    public var kind: Kind
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
    /// A device grant's seconds between polls, and when the next is due.
    public var pollInterval: Int?
    public var nextPollAt: Timestamp?

    public init(
        key: String, kind: Kind = .authorizationCode, credentialID: CredentialID, provider: String, uid: UInt32,
        createdAt: Timestamp, expiresAt: Timestamp, sealTerm: UInt32, secret: [UInt8], details: [UInt8],
        pollInterval: Int? = nil, nextPollAt: Timestamp? = nil
    ) {
        self.key = key
        self.kind = kind
        self.pollInterval = pollInterval
        self.nextPollAt = nextPollAt
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
    /// A device grant's: started by a caller without `credential:write`.
    public var keepsSubject: Bool?
    /// A device grant's: the issuer an id token must name.
    public var issuer: String?

    public init(
        redirectURI: String, scopes: [String], nonce: String?, labels: [String: String]?, gid: UInt32?,
        keepsSubject: Bool? = nil, issuer: String? = nil
    ) {
        self.redirectURI = redirectURI
        self.scopes = scopes
        self.nonce = nonce
        self.labels = labels
        self.gid = gid
        self.keepsSubject = keepsSubject
        self.issuer = issuer
    }
}

/// Where pending sign-ins are kept (both databases; `migrations/0008_authorizations.sql`).
public protocol AuthorizationStore: Sendable {
    /// Removes every row expired at `now`, then adds `row` unless its caller has `limit` rows
    /// already (false then). Durable: a sign-in the caller was told of survives a crash.
    func addAuthorization(_ row: SealedAuthorization, limit: Int, now: Timestamp) async throws -> Bool
    /// Removes and returns the authorization code row under `key`, expired or not (the caller
    /// says which): a sign-in is finished at most once.
    func takeAuthorization(key: String) async throws -> SealedAuthorization?
    /// Device grants due at `now` that no node holds (or whose holder's claim lapsed, or whose
    /// holder was an earlier run of `claim`'s node: `LeaseName`), at most `limit`, now held by
    /// `claim` until `until`: one node polls a grant at a time, and a restarted node resumes at once.
    func claimDevicePolls(now: Timestamp, claim: String, until: Timestamp, limit: Int) async throws
        -> [SealedAuthorization]
    /// The next poll of the device grant `key`, which `claim` holds: `interval` seconds apart,
    /// due at `at`, and no longer held. False when the row is gone or another node holds it.
    func scheduleDevicePoll(key: String, claim: String, interval: Int, at: Timestamp) async throws -> Bool
    /// Removes the device grant `key` (it ended: tokens stored, refused or expired), telling the
    /// other nodes sharing the store how it `ended` (nil: removed for another cause); false when
    /// it was gone.
    func removeDevicePoll(key: String, ended: SignInEnd?) async throws -> Bool
    /// The device grants waiting for `credentialID`, expired or not, for its status.
    func devicePolls(for credentialID: CredentialID) async throws -> [SealedAuthorization]
    /// The rows of `uid` that `addAuthorization` counts at `now` against its limit (device grants
    /// whatever their expiry: their poller ends them).
    func waitingAuthorizations(uid: UInt32, now: Timestamp) async throws -> Int
}
