import TokenVaultCore

/// How a provider request leaves the process. The daemon sends every call through the courier
/// (`TokenVaultCourier`), a separate process whose answers survive the daemon; tests, the
/// courier itself and anything without a courier send directly (`DirectTransport`). Either way
/// the provider kinds build the same `PreparedRequest` and read the same `HTTPAnswer`.
public protocol ProviderTransport: Sendable {
    /// Sends `request` and reads the whole answer; a failure to get one is thrown classified
    /// (`ProviderErrorClassifier.transport`: not sent, or an unknown outcome). `call`: the key
    /// the courier keeps the answer under until it is settled (nil: a call nobody recovers, such
    /// as a discovery document); an answer recovered under it carries its `sentAt`.
    func send(_ request: PreparedRequest, call: ProviderCall?) async throws(ProviderFailure) -> HTTPAnswer
    /// Releases what the transport holds. Safe to call more than once.
    func shutdown() async throws
}

/// A request as a provider kind built it, complete (client authentication included).
public struct PreparedRequest: Sendable, Equatable {
    public var method: String
    public var url: String
    /// In order; names as given.
    public var headers: [HeaderField]
    public var body: [UInt8]

    public init(method: String, url: String, headers: [HeaderField], body: [UInt8]) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

public struct HeaderField: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// One answer from a provider, its body read in full (or found too large).
public struct HTTPAnswer: Sendable, Equatable {
    public var status: Int
    /// Lower-cased names; repeated headers joined with ", ".
    public var headers: [String: String]
    public var body: [UInt8]
    public var bodyTooLarge = false
    /// When the request was sent, for an answer the courier kept through a restart and handed
    /// back (nil: this call's own). Never on the wire between daemon and courier.
    public var sentAt: Timestamp?

    public init(status: Int, headers: [String: String], body: [UInt8], bodyTooLarge: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.bodyTooLarge = bodyTooLarge
    }

    /// Bodies larger than this are not read: no token response or error document is that big.
    public static let maximumBodySize = 1 << 20
    /// Header fields kept from an answer, and their bytes (names and values) at most: the courier
    /// keeps no more than the daemon reads back (`CourierMessage`), so an answer padded with
    /// thousands of fields still crosses the link. No answer a provider kind reads needs more.
    public static let maximumHeaderFields = 256
    public static let maximumHeaderBytes = 64 << 10

    /// Adds a received field (names lower-cased, a repeated one joined with ", "), unless the
    /// answer already holds `maximumHeaderFields` names or `maximumHeaderBytes`: then the field is
    /// dropped. The one place an answer's headers are collected.
    public mutating func addHeader(name: String, value: String) {
        let key = name.lowercased()
        let joined = headers[key].map { "\($0), \(value)" } ?? value
        guard headers[key] != nil || headers.count < Self.maximumHeaderFields else { return }
        let kept = headers.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        let added = joined.utf8.count - (headers[key]?.utf8.count ?? -key.utf8.count)
        guard kept + added <= Self.maximumHeaderBytes else { return }
        headers[key] = joined
    }
}

/// How long a provider call waits. Connecting is short: a call that never connected was never
/// sent, and is retried freely. Waiting for the answer is long: a rotating call (refresh, code
/// exchange) the vault gives up on has usually been processed by the provider anyway, so the
/// retry presents a spent token and costs the credential, while an answer waited for costs a few
/// reads a `token_expired` at most (with a 10 s read timeout, a provider that answered one call in
/// ten late cost 70 % of the credentials within 90 s).
public struct CallTimeouts: Sendable, Equatable {
    /// TCP connect and TLS handshake (`connect_timeout_seconds`).
    public var connectSeconds: Double
    /// Between sending and each part of the answer (`timeout_seconds`).
    public var readSeconds: Double

    public static let defaultConnectSeconds = 5.0
    public static let defaultReadSeconds = 60.0

    public init(connectSeconds: Double = Self.defaultConnectSeconds, readSeconds: Double = Self.defaultReadSeconds) {
        self.connectSeconds = connectSeconds
        self.readSeconds = readSeconds
    }

    /// The longest a call may take in all: connecting, the read timeout and five seconds to spare
    /// (a backstop against a server trickling bytes under the read timeout).
    public var callDeadlineSeconds: Double { connectSeconds + readSeconds + 5 }
}

/// What a transport needs to know about a provider instance: how long to wait, whom to trust,
/// how many connections, which client certificate to present.
public struct TransportSettings: Sendable, Equatable {
    public var timeouts: CallTimeouts
    /// A PEM bundle trusted instead of the system roots (a private CA: the server's chain must end
    /// at one of its certificates), or beside them when `trustsSystemRoots`.
    public var caFile: String?
    /// With `caFile`, whether the system roots are trusted too (`trust_system_roots`).
    public var trustsSystemRoots: Bool
    /// Connections open at once, from the instance's `limits.concurrency`, so the engine's
    /// limit, not the HTTP client's default pool of 8, decides how many calls run together.
    public var maximumConnections: Int
    /// A TLS client certificate and key (mutual TLS, as Sber ID requires).
    public var clientIdentity: TLSClientIdentity?
    /// How long a connection to the token endpoint is kept open after a call for the next one
    /// (`keep_alive_seconds`); 0: a fresh connection per call (`Connection: close`).
    public var keepAliveSeconds: Double

    /// Short: below the idle limit of common servers (5 s for Apache httpd and Node.js), so the
    /// server seldom closes a kept connection just as a call is sent on it.
    public static let defaultKeepAliveSeconds = 4.0

    public init(
        timeouts: CallTimeouts = CallTimeouts(), caFile: String? = nil, trustsSystemRoots: Bool = false,
        maximumConnections: Int, clientIdentity: TLSClientIdentity? = nil,
        keepAliveSeconds: Double = Self.defaultKeepAliveSeconds
    ) {
        self.timeouts = timeouts
        self.caFile = caFile
        self.trustsSystemRoots = trustsSystemRoots
        self.maximumConnections = maximumConnections
        self.clientIdentity = clientIdentity
        self.keepAliveSeconds = keepAliveSeconds
    }

    public var callDeadlineSeconds: Double { timeouts.callDeadlineSeconds }
}

/// Makes the transport for a provider instance (as configured, and what its transport needs): the
/// courier's transport describes the instance to the courier, which reads its TLS files itself.
public typealias TransportMaker = @Sendable (ProviderSettings, TransportSettings) -> any ProviderTransport
