extension VaultError {
    /// A stable, machine-readable error code: the `code` of every problem document and CLI error.
    ///
    /// Codes are constants of this one type (as swift-service-lifecycle's `ServiceGroupError.Code`),
    /// never string literals compared across modules. Each code's status in the local API comes
    /// from one exhaustive switch (`httpStatus`), so a new code cannot silently become a 500; a
    /// test checks every code against the table in docs/openapi.yaml. Never rename a code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        enum Value: String, CaseIterable, Sendable {
            // Bad input.
            case invalidField = "invalid_field"
            case invalidPayload = "invalid_payload"
            case invalidCredentialID = "invalid_credential_id"
            case invalidRequest = "invalid_request"
            // Who and what.
            case forbidden
            case credentialNotFound = "credential_not_found"
            case notFound = "not_found"
            case methodNotAllowed = "method_not_allowed"
            // The credential's state does not allow it.
            case tokenExpired = "token_expired"
            case minTTLUnreachable = "min_ttl_unreachable"
            case needsReauth = "needs_reauth"
            case revokePending = "revoke_pending"
            case notRefreshable = "not_refreshable"
            case conflict
            // Request shape.
            case payloadTooLarge = "payload_too_large"
            case unsupportedMediaType = "unsupported_media_type"
            // Providers and code exchange.
            case unknownProvider = "unknown_provider"
            case providerNotConfigured = "provider_not_configured"
            case providerRejected = "provider_rejected"
            case nonceMismatch = "nonce_mismatch"
            case audienceMismatch = "audience_mismatch"
            case idTokenExpired = "id_token_expired"
            case idTokenInvalid = "id_token_invalid"
            case rateLimited = "rate_limited"
            // Sign-ins the vault starts.
            case invalidCallback = "invalid_callback"
            case authorizationUnknown = "authorization_unknown"
            case authorizationExpired = "authorization_expired"
            case authorizationMismatch = "authorization_mismatch"
            case authorizationDenied = "authorization_denied"
            case issuerMismatch = "issuer_mismatch"
            case redirectURINotAllowed = "redirect_uri_not_allowed"
            case tooManyAuthorizations = "too_many_authorizations"
            case tooManyStreams = "too_many_streams"
            case providerUnavailable = "provider_unavailable"
            // The proxy.
            case upstreamNotAllowed = "upstream_not_allowed"
            case tooManyProxyCalls = "too_many_proxy_calls"
            case upstreamUnavailable = "upstream_unavailable"
            case upstreamTooLarge = "upstream_too_large"
            case upstreamTimeout = "upstream_timeout"
            // Storage and keys.
            case storageUnavailable = "storage_unavailable"
            case commitPending = "commit_pending"
            case engineUnavailable = "engine_unavailable"
            case clockSkew = "clock_skew"
            case tooManyConnections = "too_many_connections"
            case internalError = "internal_error"
            case integrityError = "integrity_error"
            case cryptoError = "crypto_error"
            case unknownKeyTerm = "unknown_key_term"
            case storageError = "storage_error"
            case wrongMasterKey = "wrong_master_key"
            case keySourceError = "key_source_error"
            case migrationError = "migration_error"
            // The command line and the daemon's start-up (never an API answer).
            case vaultNotFound = "vault_not_found"
            case alreadyInitialised = "already_initialised"
            case daemonRunning = "daemon_running"
            case lockError = "lock_error"
            case socketError = "socket_error"
            case peerUnknown = "peer_unknown"
        }

        let value: Value

        private init(_ value: Value) { self.value = value }

        /// The code as it appears on the wire.
        public var rawValue: String { value.rawValue }
        public var description: String { value.rawValue }

        /// The code with this wire name, if there is one.
        public init?(rawValue: String) {
            guard let value = Value(rawValue: rawValue) else { return nil }
            self.value = value
        }

        public static var allCases: [Code] { Value.allCases.map(Code.init) }

        public static let invalidField = Code(.invalidField)
        public static let invalidPayload = Code(.invalidPayload)
        public static let invalidCredentialID = Code(.invalidCredentialID)
        /// A request the HTTP layer could not take (a malformed head, a query that does not parse).
        public static let invalidRequest = Code(.invalidRequest)
        public static let forbidden = Code(.forbidden)
        public static let credentialNotFound = Code(.credentialNotFound)
        /// No such route.
        public static let notFound = Code(.notFound)
        public static let methodNotAllowed = Code(.methodNotAllowed)
        /// No token valid for the `min_ttl` asked can be served (expired, or the refresh failed).
        public static let tokenExpired = Code(.tokenExpired)
        /// The `min_ttl` asked is longer than the provider's tokens ever live: refreshing cannot help.
        public static let minTTLUnreachable = Code(.minTTLUnreachable)
        public static let needsReauth = Code(.needsReauth)
        public static let revokePending = Code(.revokePending)
        public static let notRefreshable = Code(.notRefreshable)
        public static let conflict = Code(.conflict)
        public static let payloadTooLarge = Code(.payloadTooLarge)
        public static let unsupportedMediaType = Code(.unsupportedMediaType)
        public static let unknownProvider = Code(.unknownProvider)
        /// The provider instance exists but cannot do this (a code exchange on an instance without
        /// a token endpoint).
        public static let providerNotConfigured = Code(.providerNotConfigured)
        /// The provider refused a code exchange (`invalid_grant` and the like).
        public static let providerRejected = Code(.providerRejected)
        public static let nonceMismatch = Code(.nonceMismatch)
        public static let audienceMismatch = Code(.audienceMismatch)
        public static let idTokenExpired = Code(.idTokenExpired)
        public static let idTokenInvalid = Code(.idTokenInvalid)
        public static let rateLimited = Code(.rateLimited)
        /// What the authorization server's redirect brought cannot be read as one answer (no
        /// `state`, two of them, neither `code` nor `error`).
        public static let invalidCallback = Code(.invalidCallback)
        /// No sign-in waits under this `state`: never started, finished already, or pruned.
        public static let authorizationUnknown = Code(.authorizationUnknown)
        /// The sign-in was not finished within its lifetime (`sign_in.expiry_seconds`).
        public static let authorizationExpired = Code(.authorizationExpired)
        /// The sign-in was started for another credential, or by another caller: it is spent.
        public static let authorizationMismatch = Code(.authorizationMismatch)
        /// The authorization server answered the sign-in with an error (`access_denied`, …).
        public static let authorizationDenied = Code(.authorizationDenied)
        /// The callback's `iss` is not the instance's issuer, or is missing where the server
        /// promised it (RFC 9207).
        public static let issuerMismatch = Code(.issuerMismatch)
        /// A sign-in's `redirect_uri` is not one of the instance's `redirect_uris`.
        public static let redirectURINotAllowed = Code(.redirectURINotAllowed)
        /// The caller has `sign_in.max_pending_per_uid` sign-ins waiting already.
        public static let tooManyAuthorizations = Code(.tooManyAuthorizations)
        /// The caller has `limits.max_streams_per_uid` watch and event streams open already.
        public static let tooManyStreams = Code(.tooManyStreams)
        /// The daemon (or this caller) has as many connections open as it allows.
        public static let tooManyConnections = Code(.tooManyConnections)
        public static let providerUnavailable = Code(.providerUnavailable)
        /// A proxied call to a URL outside the credential's instance's `api_base_urls` (422, not
        /// 403: a 403 always means a permission the caller lacks, and names it).
        public static let upstreamNotAllowed = Code(.upstreamNotAllowed)
        /// The caller has `limits.max_proxy_calls_per_uid` proxied calls in flight already.
        public static let tooManyProxyCalls = Code(.tooManyProxyCalls)
        /// The upstream of a proxied call could not be reached, or failed before its answer began.
        public static let upstreamUnavailable = Code(.upstreamUnavailable)
        /// The upstream's answer declared a body larger than `proxy.max_response_bytes`.
        public static let upstreamTooLarge = Code(.upstreamTooLarge)
        /// The upstream did not begin its answer within `proxy.deadline_seconds`.
        public static let upstreamTimeout = Code(.upstreamTimeout)
        /// The database did not take a write now; the same request may succeed later.
        public static let storageUnavailable = Code(.storageUnavailable)
        /// The provider answered (a code was redeemed) but the database has not taken the new
        /// tokens yet: they are held in memory and committed as soon as it does.
        public static let commitPending = Code(.commitPending)
        public static let engineUnavailable = Code(.engineUnavailable)
        /// This node's clock is further off the database's than `limits.max_clock_offset_seconds`:
        /// it serves and refreshes nothing until the clock is set right (another node can).
        public static let clockSkew = Code(.clockSkew)
        public static let internalError = Code(.internalError)
        public static let integrityError = Code(.integrityError)
        public static let cryptoError = Code(.cryptoError)
        public static let unknownKeyTerm = Code(.unknownKeyTerm)
        public static let storageError = Code(.storageError)
        public static let wrongMasterKey = Code(.wrongMasterKey)
        public static let keySourceError = Code(.keySourceError)
        public static let migrationError = Code(.migrationError)
        public static let vaultNotFound = Code(.vaultNotFound)
        public static let alreadyInitialised = Code(.alreadyInitialised)
        public static let daemonRunning = Code(.daemonRunning)
        public static let lockError = Code(.lockError)
        public static let socketError = Code(.socketError)
        public static let peerUnknown = Code(.peerUnknown)

        /// The HTTP status this code is answered with in the local API. One exhaustive switch:
        /// adding a code does not compile until it is placed here (and in docs/openapi.yaml).
        public var httpStatus: Int {
            switch value {
            case .invalidField, .invalidPayload, .invalidCredentialID, .invalidRequest, .invalidCallback: 400
            case .forbidden: 403
            case .credentialNotFound, .notFound, .authorizationUnknown: 404
            case .methodNotAllowed: 405
            case .tokenExpired, .minTTLUnreachable, .needsReauth, .revokePending, .notRefreshable, .conflict,
                .authorizationExpired, .authorizationMismatch:
                409
            case .payloadTooLarge: 413
            case .unsupportedMediaType: 415
            case .unknownProvider, .providerNotConfigured, .providerRejected, .nonceMismatch, .audienceMismatch,
                .idTokenExpired, .idTokenInvalid, .upstreamNotAllowed, .authorizationDenied, .issuerMismatch,
                .redirectURINotAllowed:
                422
            case .rateLimited, .tooManyStreams, .tooManyProxyCalls, .tooManyAuthorizations: 429
            case .providerUnavailable, .upstreamUnavailable, .upstreamTooLarge: 502
            case .upstreamTimeout: 504
            case .storageUnavailable, .commitPending, .engineUnavailable, .tooManyConnections, .clockSkew: 503
            case .internalError, .integrityError, .cryptoError, .unknownKeyTerm, .storageError, .wrongMasterKey,
                .keySourceError, .migrationError:
                500
            case .vaultNotFound, .alreadyInitialised, .daemonRunning, .lockError, .socketError, .peerUnknown: 500
            }
        }

        /// A short summary of the problem, the same for every occurrence (RFC 9457 `title`; the
        /// `detail` says what happened this time). One exhaustive switch, as for the status.
        public var title: String {
            switch value {
            case .invalidField: "Invalid field"
            case .invalidPayload: "Invalid payload"
            case .invalidCredentialID: "Invalid credential id"
            case .invalidRequest: "Invalid request"
            case .forbidden: "Forbidden"
            case .credentialNotFound: "Credential not found"
            case .notFound: "Not found"
            case .methodNotAllowed: "Method not allowed"
            case .tokenExpired: "Token expired"
            case .minTTLUnreachable: "min_ttl cannot be met"
            case .needsReauth: "Sign-in needed again"
            case .revokePending: "Revocation pending"
            case .notRefreshable: "Not refreshable"
            case .conflict: "Conflict"
            case .payloadTooLarge: "Payload too large"
            case .unsupportedMediaType: "Unsupported media type"
            case .unknownProvider: "Unknown provider"
            case .providerNotConfigured: "Provider not configured"
            case .providerRejected: "Provider rejected the request"
            case .nonceMismatch: "Nonce mismatch"
            case .audienceMismatch: "Audience mismatch"
            case .idTokenExpired: "ID token expired"
            case .idTokenInvalid: "ID token invalid"
            case .rateLimited: "Too many requests"
            case .invalidCallback: "Invalid callback"
            case .authorizationUnknown: "No such sign-in"
            case .authorizationExpired: "Sign-in expired"
            case .authorizationMismatch: "Sign-in started elsewhere"
            case .authorizationDenied: "Sign-in refused"
            case .issuerMismatch: "Issuer mismatch"
            case .redirectURINotAllowed: "Redirect URI not allowed"
            case .tooManyAuthorizations: "Too many sign-ins pending"
            case .tooManyStreams: "Too many streams"
            case .providerUnavailable: "Provider unavailable"
            case .upstreamNotAllowed: "Upstream not allowed"
            case .tooManyProxyCalls: "Too many proxied calls"
            case .upstreamUnavailable: "Upstream unavailable"
            case .upstreamTooLarge: "Upstream answer too large"
            case .upstreamTimeout: "Upstream timeout"
            case .storageUnavailable: "Storage unavailable"
            case .commitPending: "Tokens held, commit pending"
            case .engineUnavailable: "Refresh engine not running"
            case .clockSkew: "Clock too far off"
            case .tooManyConnections: "Too many connections"
            case .internalError: "Internal error"
            case .integrityError: "Integrity error"
            case .cryptoError: "Cryptographic error"
            case .unknownKeyTerm: "Unknown key term"
            case .storageError: "Storage error"
            case .wrongMasterKey: "Wrong master key"
            case .keySourceError: "Key source error"
            case .migrationError: "Migration error"
            case .vaultNotFound: "No vault"
            case .alreadyInitialised: "Vault exists already"
            case .daemonRunning: "Daemon running"
            case .lockError: "Lock error"
            case .socketError: "Socket error"
            case .peerUnknown: "Caller unknown"
            }
        }

        /// A sealed value could not be opened: tampered, moved, or its key term is gone.
        public var meansUnreadable: Bool {
            switch value {
            case .integrityError, .unknownKeyTerm, .cryptoError: true
            default: false
            }
        }

        /// The database refused or did not answer (a write's outcome may be unknown).
        public var meansStorageFailed: Bool {
            switch value {
            case .storageUnavailable, .storageError: true
            default: false
            }
        }

        /// Whether the API may show this code's message to the caller. A 500's message can name
        /// internals (a file, a term); the caller gets a fixed text and the log gets the message.
        public var isInternal: Bool { httpStatus == 500 }
    }
}
