extension ProviderFailure {
    /// A failure's stable, machine-readable code: the provider's own (`invalid_grant`,
    /// `limit_exceeded`, `ESIA-007011`, passed through as it sent it) or one of ours, which are
    /// the constants below, never string literals compared across modules (as `VaultError.Code`).
    /// Stored as its raw value in a credential's `last_error.code`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String

        /// A code as a provider sent it (or as stored).
        public init(rawValue: String) { self.rawValue = rawValue }

        public var description: String { rawValue }

        /// The grant is dead (the OAuth error code, also given to a gateway's own refusal of it).
        public static let invalidGrant = Code(rawValue: "invalid_grant")
        /// The server refused the client's authentication (RFC 6749 section 5.2).
        public static let invalidClient = Code(rawValue: "invalid_client")
        /// An answer with this HTTP status and no error code of the provider's.
        public static func http(_ status: Int) -> Code { Code(rawValue: "http_\(status)") }
        /// No answer within the read timeout.
        public static let timeout = Code(rawValue: "timeout")
        /// The connection broke after the request was sent.
        public static let connectionDropped = Code(rawValue: "connection_dropped")
        /// The connection could not be made: nothing was sent.
        public static let connectionFailed = Code(rawValue: "connection_failed")
        /// The TLS handshake failed: nothing was sent.
        public static let tlsError = Code(rawValue: "tls_error")
        /// The call was cancelled after the request was sent.
        public static let cancelled = Code(rawValue: "cancelled")
        /// Any other transport failure after the request was sent.
        public static let transportError = Code(rawValue: "transport_error")
        /// An answer that could not be read.
        public static let malformedResponse = Code(rawValue: "malformed_response")
        /// An answer that does not belong to the request (ESIA's `state`).
        public static let stateMismatch = Code(rawValue: "state_mismatch")
        /// The courier ended with the call in flight.
        public static let courierLost = Code(rawValue: "courier_lost")
        /// No courier to take the call.
        public static let courierUnavailable = Code(rawValue: "courier_unavailable")
        /// The courier has not started (it waits for an earlier daemon's, or could not start): the
        /// spool is unread, so nothing was sent and a journalled attempt stays open.
        public static let courierNotReady = Code(rawValue: "courier_not_ready")
        /// The courier has no transport for the call's route.
        public static let courierNoTransport = Code(rawValue: "courier_no_transport")
        /// The instance has no token endpoint, or is not configured at all.
        public static let providerNotConfigured = Code(rawValue: "provider_not_configured")
        /// The credential's own tokens do not open.
        public static let unreadable = Code(rawValue: "unreadable")
        /// ESIA's GOST signer did not answer in time, or failed; or a client assertion could not be
        /// signed (`signer_failed`, nothing was sent).
        public static let signerTimeout = Code(rawValue: "signer_timeout")
        public static let signerFailed = Code(rawValue: "signer_failed")
        /// No DPoP proof could be made (the vault's DPoP key is unavailable): nothing was sent.
        public static let dpopProofFailed = Code(rawValue: "dpop_proof_failed")
        /// OpenID discovery of the token endpoint failed.
        public static let discoveryFailed = Code(rawValue: "discovery_failed")
        /// The instance cannot revoke (no revocation endpoint).
        public static let revocationNotSupported = Code(rawValue: "revocation_not_supported")
        /// The instance cannot make RFC 8693 token exchanges (not an `oauth2` instance).
        public static let tokenExchangeNotSupported = Code(rawValue: "token_exchange_not_supported")
        /// The instance makes no such grant: not an `oauth2` instance, or its `client_credentials`
        /// option is absent or does not list what was asked. Nothing was sent.
        public static let grantNotSupported = Code(rawValue: "grant_not_supported")
        /// The instance is paused (its circuit is open): nothing was sent.
        public static let providerPaused = Code(rawValue: "provider_paused")
        /// A token exchange grant's subject credential has no access token to exchange (gone,
        /// expired, waiting for a sign-in): nothing was sent.
        public static let subjectUnavailable = Code(rawValue: "subject_unavailable")
        /// The refresh token's own expiry has passed.
        public static let refreshTokenExpired = Code(rawValue: "refresh_token_expired")
        /// The access token expired and there is nothing to refresh it with.
        public static let expired = Code(rawValue: "expired")
        /// A removal revoked the tokens it read, but a refresh stored new ones meanwhile: the
        /// credential stays pending removal, and the next try revokes those.
        public static let refreshedDuringRemoval = Code(rawValue: "refreshed_during_removal")
        /// A failure of ours that has no better name (the daemon log has the details).
        public static let internalError = Code(rawValue: "internal_error")
    }
}
