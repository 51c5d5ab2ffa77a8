/// A device authorization server's answer (RFC 8628 section 3.2): the device code the client
/// polls with (a secret: it is redeemed for the tokens), and the user code the person enters at
/// the verification page.
public struct DeviceAuthorization: Sendable {
    public var deviceCode: SecretBytes
    public var userCode: DeviceUserCode
    /// Seconds the codes are valid for.
    public var expiresIn: Double
    /// The server's issuer identifier, when configured or discovered: an id token that comes
    /// back must name it.
    public var issuer: String?

    public init(deviceCode: SecretBytes, userCode: DeviceUserCode, expiresIn: Double, issuer: String?) {
        self.deviceCode = deviceCode
        self.userCode = userCode
        self.expiresIn = expiresIn
        self.issuer = issuer
    }
}

/// What the person needs to approve a device grant: shown to them, never secret on its own (it
/// grants nothing without their consent at the verification page).
public struct DeviceUserCode: Sendable, Equatable {
    public var userCode: String
    public var verificationURI: String
    /// The page with the user code filled in (for a QR code or a link).
    public var verificationURIComplete: String?
    /// Seconds between polls the server asked for (5 when it said nothing, RFC 8628 section 3.5).
    public var interval: Int

    public init(userCode: String, verificationURI: String, verificationURIComplete: String?, interval: Int) {
        self.userCode = userCode
        self.verificationURI = verificationURI
        self.verificationURIComplete = verificationURIComplete
        self.interval = interval
    }
}

/// A device grant the daemon polls for (RFC 8628 section 3.4), as the vault keeps it: found by
/// `key` (the device code's fingerprint), redeemed into `credentialID` and nothing else.
public struct PendingDeviceSignIn: Sendable {
    public var key: String
    public var credentialID: CredentialID
    public var provider: String
    public var deviceCode: SecretBytes
    public var scopes: [String]
    public var labels: [String: String]?
    /// Who started it: its audit rows name them, and `GET …/authorization` shows it to them.
    public var uid: UInt32
    public var gid: UInt32?
    /// A caller without `credential:write` started it: it repairs only the same account.
    public var keepsSubject: Bool
    public var issuer: String?
    /// Seconds between polls, raised by 5 at every `slow_down`.
    public var interval: Int
    public var nextPollAt: Timestamp
    public var createdAt: Timestamp
    public var expiresAt: Timestamp

    public init(
        key: String, credentialID: CredentialID, provider: String, deviceCode: SecretBytes, scopes: [String],
        labels: [String: String]?, uid: UInt32, gid: UInt32?, keepsSubject: Bool, issuer: String?, interval: Int,
        nextPollAt: Timestamp, createdAt: Timestamp, expiresAt: Timestamp
    ) {
        self.key = key
        self.credentialID = credentialID
        self.provider = provider
        self.deviceCode = deviceCode
        self.scopes = scopes
        self.labels = labels
        self.uid = uid
        self.gid = gid
        self.keepsSubject = keepsSubject
        self.issuer = issuer
        self.interval = interval
        self.nextPollAt = nextPollAt
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// Which grant a token request redeems (RFC 6749 section 4.1.3, RFC 8628 section 3.4).
public enum CodeGrant: String, Sendable, Codable {
    case authorizationCode = "authorization_code"
    case deviceCode = "urn:ietf:params:oauth:grant-type:device_code"
}
