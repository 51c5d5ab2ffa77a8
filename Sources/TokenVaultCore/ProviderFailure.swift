/// A failed call to a provider, classified the way docs/providers/ describes. The class
/// decides what happens to the credential; `code` and `message` are shown to operators and
/// never contain a token.
public struct ProviderFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// The grant is dead (`invalid_grant`): the credential needs a new sign-in. Never retried.
        case invalidGrant = "invalid_grant"
        /// The client registration is wrong (`invalid_client`, `unauthorized_client`,
        /// `unsupported_grant_type`, a bad request): pause the provider, probe slowly.
        case misconfigured
        /// Worth retrying later: 5xx, 429, `server_error`, `temporarily_unavailable`,
        /// connection refused. The request was not acted on.
        case transient
        /// The request was sent but no usable answer came back (timeout, dropped connection,
        /// unreadable body). A rotating provider may already have spent the refresh token:
        /// retry with the same token.
        case unknownOutcome = "unknown_outcome"
    }

    public var kind: Kind
    /// Stable, machine-readable: the provider's error code or one of ours (`Code`).
    public var code: Code
    /// For people. Never a token; provider texts are truncated.
    public var message: String
    /// Seconds the provider asked us to wait (`Retry-After`), or a provider rule's wait
    /// (T-ID `limit_exceeded`).
    public var retryAfter: Double?
    /// The HTTP status, when an answer arrived.
    public var httpStatus: Int?

    public init(kind: Kind, code: Code, message: String, retryAfter: Double? = nil, httpStatus: Int? = nil) {
        self.kind = kind
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        self.httpStatus = httpStatus
    }

    public var description: String { "\(kind.rawValue): \(code): \(message)" }

    /// `retryAfter` in whole seconds for a `Retry-After` header of ours: rounded up, never
    /// negative, at most a day (it came from outside; it must not trap a conversion).
    public var retryAfterWholeSeconds: Int? {
        guard let retryAfter, retryAfter.isFinite else { return nil }
        return Int(min(max(retryAfter, 0), 86_400).rounded(.up))
    }
}

extension ProviderFailure {
    /// Codes of `unknownOutcome` failures: the request went out and the answer was lost, so
    /// the provider may have rotated the refresh token. A later `invalid_grant` is explained
    /// by this.
    public static let lostAnswerCodes: Set<Code> = [
        .timeout, .connectionDropped, .malformedResponse, .stateMismatch, .courierLost,
    ]

    /// The server refused the client's authentication (`invalid_client`): a grant of the client's
    /// own would be refused so whichever credential it is for. (`unauthorized_client` is not: it
    /// refuses one grant type, and the same client's refreshes go on.)
    public var refusesTheClient: Bool { kind == .misconfigured && code == .invalidClient }

    /// The courier process ended with the call in flight: it may have been sent and answered.
    public static let courierLost = ProviderFailure(
        kind: .unknownOutcome, code: .courierLost,
        message: "the courier process ended during the call; the request may have reached the provider")

    /// The courier has not read the spool (it did not start, or the daemon is stopping first):
    /// nothing was sent, and the call's attempt stays open for the next daemon, whose courier
    /// may hand it the answer an earlier one spooled.
    public static let courierNotReady = ProviderFailure(
        kind: .transient, code: .courierNotReady,
        message: "the courier has not started (the spool is unread); nothing was sent")

    /// The courier was not there to take the call: nothing was sent.
    public static let courierUnavailable = ProviderFailure(
        kind: .transient, code: .courierUnavailable, message: "the courier process is not running; nothing was sent")

    /// A credential names a provider instance the daemon has no configuration for.
    /// `listed` false: no instance of that name is configured (any more: a reload removed it).
    public static func notConfigured(_ provider: String, listed: Bool = true) -> ProviderFailure {
        ProviderFailure(
            kind: .misconfigured, code: .providerNotConfigured,
            message: listed
                ? "provider '\(provider)' has no token endpoint configured; the credential cannot be refreshed"
                : "provider '\(provider)' is not in the configuration; the credential cannot be refreshed")
    }

    /// The credential's own tokens do not open (`integrity_error`, `unknown_key_term`): nothing
    /// can be sent. Recorded like a misconfiguration, so it is probed slowly, not in a loop.
    public static func unreadable(_ error: VaultError) -> ProviderFailure {
        ProviderFailure(kind: .misconfigured, code: .unreadable, message: error.detail)
    }
}
