extension TestOAuthServer {
    /// How the server behaves. Each provider quirk in docs/providers/ is a setting here, so a
    /// test imitates a provider without new server code; `TestOAuthServer.update` changes it on a
    /// running server (the next request sees the change).
    public struct Options: Sendable {
        public var clientID: String = "vault-client"
        /// nil: a public client; with `.basic`, `client_id:` with an empty password is then accepted (T-ID mobile).
        public var clientSecret: String? = "vault-secret"
        /// Wrong or missing client authentication answers 401 `invalid_client` in `errorShape`.
        public var clientAuthentication: ClientAuthentication = .basic
        /// Seconds.
        public var accessTokenLifetime: Double = 3600
        public var expiresInFormat: ExpiresInFormat = .integer
        /// A refresh returns a new refresh token and the old one is spent.
        public var rotateRefreshTokens: Bool = true
        /// When not rotating: omit the refresh token from the answer (true) or echo the same one back (false).
        public var omitRefreshTokenInResponse: Bool = false
        /// A spent refresh token presented again (past `graceWindow`) revokes its whole family
        /// (RFC 9700 4.14): every access and refresh token of it becomes invalid; the answer is
        /// `invalid_grant`. Without it, the spent token just gets `invalid_grant`.
        public var reuseDetection: Bool = true
        /// Seconds after rotation during which the spent token is still accepted (answer: a fresh
        /// pair, no revocation), as Sber's "reserve" token; past it, reuse detection applies.
        public var graceWindow: Double = 0
        public var scopeFormat: ScopeFormat = .string
        public var errorShape: ErrorShape = .rfc6749
        /// Adds an unsigned JWT `id_token` (`{"alg":"none"}`; claims iss, sub, aud = clientID, exp,
        /// iat, and the nonce registered with the code).
        public var includeIDToken: Bool = false
        /// Header name (any case) -> exact value, required on both endpoints; missing or wrong
        /// answers 400 `invalid_request` (e.g. T-ID's `X-SSO-No-Adapter: true`).
        public var requiredHeaders: [String: String] = [:]
        public var tokenPath: String = "/token"
        /// Where the metadata document is served (RFC 8414's and OpenID Connect's well-known
        /// paths); any other path answers 404.
        public var discoveryPaths: Set<String> = [
            "/.well-known/openid-configuration", "/.well-known/oauth-authorization-server",
        ]
        /// Paths answered 503 `temporarily_unavailable`, as a server that is down answers.
        public var unavailablePaths: Set<String> = []
        public var revocationPath: String = "/revoke"
        public var revocationAnswer: RevocationAnswer = .emptyJSON

        /// Seconds a refresh token lives; nil: forever. An expired one gets `invalid_grant`.
        public var refreshTokenLifetime: Double? = nil
        /// Echo the request's `state` field in token answers (ESIA does; clients must compare it).
        public var echoState: Bool = false
        /// Seconds added to `Date()` for every decision the server makes about time (expiry, grace
        /// window), so a test can move the server into the future without sleeping.
        public var clockOffset: Double = 0
        /// Every unscripted token request waits a random time in this range (seconds), then is
        /// handled normally, even if the client has left: a provider slow under load.
        public var tokenAnswerDelay: ClosedRange<Double>? = nil
        /// This share (0...1) of unscripted refreshes is handled at once (the refresh token
        /// rotates as the request arrives) and answered `seconds` later: a provider that did the
        /// work but is slow to say so. The answer is lost if the client left.
        public var lateAnswers: (share: Double, seconds: Double)? = nil
        /// Extra header fields (`X-Pad-1: p` …) on every unscripted token answer: a provider (or
        /// a proxy in front of it) that sends thousands.
        public var answerHeaderPadding = 0
        /// Require DPoP proofs (RFC 9449) at the token endpoint, checked by this verifier (its
        /// nonce required); issued tokens are bound to the proving key (`token_type` `DPoP`).
        public var dpop: DPoPVerifier? = nil
        /// Serve HTTPS (and ask for client certificates) instead of plain HTTP. Read at `start`.
        public var tls: TestServerTLS? = nil

        public init() {}
    }
}
