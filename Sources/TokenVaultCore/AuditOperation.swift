/// What an audit row says was done, defined once: every row the daemon writes names one of
/// these (`AuditEvent.operation` holds its name, as stored and as `GET /v1/admin/audit` shows
/// it).
public struct AuditOperation: Hashable, Sendable, CustomStringConvertible {
    public let name: String

    private init(_ name: String) { self.name = name }

    /// A row read back from the store names what it names, even an operation this version no
    /// longer writes.
    public init(stored name: String) { self.name = name }

    public var description: String { name }

    public static let tokenRead = Self("token.read")
    /// A token derived from the credential's by RFC 8693 token exchange.
    public static let tokenExchange = Self("token.exchange")
    public static let credentialPut = Self("credential.put")
    public static let credentialShow = Self("credential.show")
    public static let credentialList = Self("credential.list")
    public static let credentialDelete = Self("credential.delete")
    /// A credential the engine removed itself: its verify token expired.
    public static let credentialPurge = Self("credential.purge")
    public static let credentialRefresh = Self("credential.refresh")
    public static let credentialExchange = Self("credential.exchange")
    /// A sign-in the vault started for the credential (`POST …/authorization`).
    public static let credentialAuthorize = Self("credential.authorize")
    /// A sign-in finished (`POST …/authorization/callback`): the code redeemed, or the refusal.
    public static let credentialAuthorized = Self("credential.authorized")
    public static let credentialWatch = Self("credential.watch")
    /// A commit the database lost in a failover, written back by the node that kept it.
    public static let credentialReapply = Self("credential.reapply")
    /// A proxied call (aggregated like token reads).
    public static let credentialProxy = Self("credential.proxy")
    /// The credentials a caller may use through the proxy (`GET /v1/proxy/credentials`).
    public static let proxyList = Self("proxy.list")
    public static let eventsStream = Self("events.stream")
    public static let adminRotateKey = Self("admin.rotate_key")
    public static let adminAudit = Self("admin.audit")
    public static let adminBackup = Self("admin.backup")
    public static let adminStatus = Self("admin.status")
    public static let adminProvider = Self("admin.provider")

    /// Every operation the daemon writes.
    public static let all: [Self] = [
        .tokenRead, .tokenExchange, .credentialPut, .credentialShow, .credentialList, .credentialDelete,
        .credentialPurge,
        .credentialRefresh, .credentialExchange, .credentialAuthorize, .credentialAuthorized, .credentialWatch,
        .credentialReapply, .credentialProxy, .proxyList, .eventsStream,
        .adminRotateKey, .adminAudit, .adminBackup, .adminStatus, .adminProvider,
    ]
}
