/// A sign-in a caller asks the vault to start (`POST …/authorization`): for which credential, at
/// which provider instance, and what to ask the person for.
public struct SignInStart: Sendable {
    /// How the sign-in is handed to the caller.
    public enum Mode: String, Sendable {
        /// The authorization URL, pushed first where the server takes pushed requests.
        case url
        /// The request's parameters (state, nonce, PKCE challenge, …) for a mobile SDK that
        /// builds the request itself; the code it returns is finished the same way.
        case parameters
        /// The device grant (RFC 8628): a user code and a page to enter it on, for a person
        /// with a browser elsewhere; the daemon polls the token endpoint until the person has
        /// decided, and stores the tokens itself.
        case device
    }

    public var credentialID: CredentialID
    public var provider: String
    /// Required but for `.device`, which has no redirect.
    public var redirectURI: String?
    public var scopes: [String]
    public var loginHint: String?
    public var prompt: String?
    public var resources: [String]
    public var extra: [String: String]
    public var labels: [String: String]?
    public var mode: Mode
    /// The caller, who alone may finish it; and the row written when it starts.
    public var audit: AuditEvent
    /// Whether the credential, if it exists, may only be repaired with tokens for its own
    /// subject (a caller without `credential:write`). A device grant ends without its caller,
    /// so it is decided when it starts.
    public var keepsSubject: Bool

    public init(
        credentialID: CredentialID, provider: String, redirectURI: String?, scopes: [String], loginHint: String? = nil,
        prompt: String? = nil, resources: [String] = [], extra: [String: String] = [:],
        labels: [String: String]? = nil, mode: Mode = .url, audit: AuditEvent, keepsSubject: Bool = false
    ) {
        self.credentialID = credentialID
        self.provider = provider
        self.redirectURI = redirectURI
        self.scopes = scopes
        self.loginHint = loginHint
        self.prompt = prompt
        self.resources = resources
        self.extra = extra
        self.labels = labels
        self.mode = mode
        self.audit = audit
        self.keepsSubject = keepsSubject
    }
}

/// A started sign-in: where to send the person (`.url`), or what the app's SDK needs
/// (`.parameters`), and until when it can be finished.
public struct StartedSignIn: Sendable {
    /// The authorization URL (`.url` mode).
    public var authorizationURL: String?
    /// Every parameter of the request (`.parameters` mode): `state`, `nonce`, `code_challenge`…
    public var parameters: [(name: String, value: String)]?
    public var expiresAt: Timestamp
    /// Whether the request was pushed (RFC 9126).
    public var pushed: Bool
    /// What the person needs (`.device` mode): the user code and where to enter it.
    public var device: DeviceUserCode?

    public init(
        authorizationURL: String?, parameters: [(name: String, value: String)]?, expiresAt: Timestamp, pushed: Bool,
        device: DeviceUserCode? = nil
    ) {
        self.authorizationURL = authorizationURL
        self.parameters = parameters
        self.expiresAt = expiresAt
        self.pushed = pushed
        self.device = device
    }
}

/// A sign-in's end, as the redirect brought it (`POST …/authorization/callback`).
public struct SignInFinish: Sendable {
    public var credentialID: CredentialID
    public var callback: AuthorizationCallback
    /// The caller (who must be the one who started it) and the row written with the credential.
    public var audit: AuditEvent
    /// Whether an existing credential may only be repaired with tokens for its own subject (a
    /// caller with `credential:authorize` but not `credential:write`).
    public var keepsSubject: Bool

    public init(credentialID: CredentialID, callback: AuthorizationCallback, audit: AuditEvent, keepsSubject: Bool) {
        self.credentialID = credentialID
        self.callback = callback
        self.audit = audit
        self.keepsSubject = keepsSubject
    }
}

/// How long a sign-in waits, how many one caller may have waiting, and how device grants are
/// polled.
public struct SignInLimits: Sendable, Equatable {
    /// Seconds between start and finish at most (the state's lifetime). A device grant lasts
    /// as long as its server says, up to `maximumDeviceSeconds`.
    public var expirySeconds: Double
    public var maximumPendingPerUID: Int
    /// The longest a device grant is polled, whatever its server's `expires_in`.
    public var maximumDeviceSeconds: Double
    /// How often the daemon looks for device grants due for a poll.
    public var devicePollCheckSeconds: Double
    /// How long a node holds a device grant while it polls it: another node takes it over
    /// after that if the node died (longer than a token request may take).
    public var deviceClaimSeconds: Double

    public init(
        expirySeconds: Double = 600, maximumPendingPerUID: Int = 20, maximumDeviceSeconds: Double = 1800,
        devicePollCheckSeconds: Double = 1, deviceClaimSeconds: Double = 180
    ) {
        self.expirySeconds = expirySeconds
        self.maximumPendingPerUID = maximumPendingPerUID
        self.maximumDeviceSeconds = maximumDeviceSeconds
        self.devicePollCheckSeconds = devicePollCheckSeconds
        self.deviceClaimSeconds = deviceClaimSeconds
    }
}
