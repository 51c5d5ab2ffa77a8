import Foundation
import Logging
import NIOCore
import TokenVaultCore

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon's configuration file (JSON). Every key is optional; errors name the key and file.
///
/// Keys beginning with `//` are comments, anywhere: `{"//": "why this rule exists"}`.
///
/// ```json
/// {
///   "socket": {"path": "/run/tokenvault/tokenvault.sock", "mode": "0660", "group": "tokenvault"},
///   "limits": {"max_body_bytes": 65536, "idle_timeout_seconds": 30},
///   "server": {"event_loops": 1},
///   "storage": {"backend": "postgres", "url": "postgres://tokenvault@db.internal/tokenvault"},
///   "providers": {"acme": {"kind": "oauth2", "token_endpoint": "https://id.example/token", "client_id": "vault"}},
///   "access": [{"group": "payments", "namespaces": ["payments"], "permissions": ["token:read"]}]
/// }
/// ```
public struct DaemonConfiguration: Sendable {
    public var socketPath: String?
    public var socketMode: mode_t = 0o660
    public var socketGroup: String?
    public var maximumBodySize = 64 * 1024
    public var idleTimeoutSeconds = 30
    /// Threads serving connections. Half the cores by default: the daemon's callers run on the
    /// same machine, and on a small one an event loop per core competes with them for CPU, which
    /// shows as millisecond stalls in the latency tail (docs/benchmarks.md, "Local API").
    public var eventLoops = DaemonConfiguration.defaultEventLoops
    public static let defaultEventLoops = max(1, System.coreCount / 2)
    static let eventLoopRange = 1...256
    /// Seconds a uid's supplementary groups are remembered before the user database is read
    /// again (a membership change is seen within this long, without a restart).
    public var groupRefreshSeconds = 60
    /// What one caller may hold open (connections, streams) and how fast it must send.
    public var connections = ConnectionLimits()
    /// The largest tokens a `PUT` or an exchange may store.
    public var tokenSizes = TokenSizeLimits()
    /// At most one on-demand refresh (a token read whose `min_ttl` the token cannot meet) per
    /// credential in this many seconds.
    public var onDemandRefreshSeconds = 10
    /// How long a node's heartbeat must be seen standing still before another node takes over its
    /// refresh attempts (`RefreshEngine.Options.leasePeriod`). Long enough for a database
    /// failover or a paused process; a node that died for good keeps its few in-flight
    /// credentials waiting this long unless `tokenvault nodes forget` releases them.
    public var leaseSeconds = 300
    /// How far (seconds, either way) a node's clock may be off the database's before it serves
    /// and refreshes nothing (PostgreSQL; `CorrectedClock`). Within it, expiry is decided on the
    /// corrected time. 10 s: far above what a host kept by NTP drifts (milliseconds), and under
    /// the margins tokens are refreshed and asked for with (`margin_seconds`, a `min_ttl` of 30 s
    /// or more), so a clock that would step by this much between two beats still errs inside them.
    public var maximumClockOffsetSeconds = 10
    /// How long (seconds) a PostgreSQL node keeps each commit of new tokens on its own disk after
    /// it returned (`limits.retain_answers_seconds`; 0: none), to write it back if a failover to
    /// an asynchronous standby loses it. It must cover how far the standby may lag; pruning stops
    /// while the database is unreachable or on a timeline not yet reconciled, so the failover's
    /// own duration does not count. 15 minutes: far beyond the seconds a healthy standby lags,
    /// and the room it takes is small (one row's size per refresh; docs/scale-out.md).
    public var retainAnswersSeconds = 900
    /// How token reads are aggregated in the audit trail and how long rows are kept.
    public var audit = AuditSettings()
    /// How long a sign-in the vault started may take to finish (`sign_in.expiry_seconds`).
    public var signInExpirySeconds = 600
    /// How many sign-ins one uid may have waiting (`sign_in.max_pending_per_uid`).
    public var signInMaximumPendingPerUID = 20
    /// The longest a device grant is polled, whatever its server says (`sign_in.device_max_seconds`).
    public var signInDeviceMaximumSeconds = 1800
    /// How long a node holds a device grant while polling it before another node may take it
    /// over (`sign_in.device_claim_seconds`): longer than a token request may take.
    public var signInDeviceClaimSeconds = 180
    /// What the proxy lets through and how long it waits.
    public var proxy = ProxySettings()
    /// Core dumps stay off unless this is set (a core file holds whatever tokens were in memory).
    public var coreDumps = false
    /// Provider instances credentials may name (the catalog reads the section). By default one
    /// name-only instance per kind: storable, not refreshed.
    public var providers: [String: ProviderSettings]
    public var providerNames: Set<String> { Set(providers.keys) }
    public var rules: [AccessPolicy.Rule] = []
    /// `log.level` (`TOKENVAULT_LOG_LEVEL`): trace, debug, info, notice, warning, error, critical.
    public var logLevel = Logger.Level.info
    /// `log.format` (`TOKENVAULT_LOG_FORMAT`): text or json.
    public var logFormat = LogFormat.text
    /// Where the vault lives (`storage.*`): every command that opens the vault reads it.
    public var storage = StorageSettings()
    /// Where events go, signed (`webhooks.*`); reloaded on SIGHUP.
    public var webhooks = WebhookSettings()
    /// Reads the `providers` section and `TOKENVAULT_PROVIDERS` (TokenVaultProviders' `ProviderKinds`).
    let catalog: any ProviderCatalog

    public init(catalog: any ProviderCatalog) {
        self.catalog = catalog
        providers = catalog.defaultInstances
    }

    struct File: Decodable {
        struct Socket: Decodable {
            var path: String?
            var mode: String?
            var group: String?
        }
        struct Rule: Decodable {
            var user: NameOrID?
            var group: NameOrID?
            var namespaces: [String]
            var permissions: [String]
        }
        struct Log: Decodable {
            var level: String?
            var format: String?
        }
        var socket: Socket?
        var log: Log?
        var access: [Rule]?
    }

    /// A user or group given by name or numeric id.
    enum NameOrID: Decodable {
        case name(String)
        case id(UInt32)
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let id = try? container.decode(UInt32.self) {
                self = .id(id)
            } else {
                self = .name(try container.decode(String.self))
            }
        }
    }

    /// Reads and validates `path`. Errors read like `config /etc/tokenvault.json: access[0].permissions: ...`.
    public static func load(path: String, catalog: any ProviderCatalog) throws -> DaemonConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(file: path, key: nil, problem: "cannot be read")
        }
        let file: File
        let root: JSONValue
        do {
            file = try JSONDecoder().decode(File.self, from: data)
            root = try JSONDecoder().decode(JSONValue.self, from: data).withoutComments
        } catch let error as DecodingError {
            throw ConfigurationError(file: path, decodingError: error)
        }
        return try DaemonConfiguration(file, root: root, path: path, catalog: catalog)
    }

    /// Only the `storage` section of `path`: what commands other than `serve` need to find the
    /// vault (they read no provider secrets and resolve no users).
    public static func loadStorage(path: String) throws -> StorageSettings {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(file: path, key: nil, problem: "cannot be read")
        }
        let root: JSONValue
        do {
            root = try JSONDecoder().decode(JSONValue.self, from: data).withoutComments
        } catch let error as DecodingError {
            throw ConfigurationError(file: path, decodingError: error)
        }
        guard case .object(let sections) = root else {
            throw ConfigurationError(file: path, key: nil, problem: "must be a JSON object")
        }
        return try sections["storage"].map { try StorageSettings($0, path: path) } ?? StorageSettings()
    }

    init(_ file: File, root: JSONValue, path: String, catalog: any ProviderCatalog) throws {
        self.init(catalog: catalog)
        try applySettings(root, path: path)
        func fail(_ key: String, _ problem: String) -> ConfigurationError {
            ConfigurationError(file: path, key: key, problem: problem)
        }
        if let socket = file.socket {
            socketPath = socket.path
            if let mode = socket.mode {
                guard let parsed = mode_t(mode, radix: 8), parsed & ~0o777 == 0 else {
                    throw fail("socket.mode", "'\(mode)' is not an octal file mode such as \"0660\"")
                }
                guard parsed & 0o007 == 0 else {
                    throw fail("socket.mode", "\(mode) gives others access; the socket must never be world-accessible")
                }
                socketMode = parsed
            }
            socketGroup = socket.group
        }
        if case .object(let sections) = root, let section = sections["storage"] {
            storage = try StorageSettings(section, path: path)
        }
        if case .object(let sections) = root, let section = sections["webhooks"] {
            try webhooks.readEndpoints(section, path: path)
        }
        if let log = file.log {
            if let level = log.level {
                guard let parsed = Logger.Level(rawValue: level) else {
                    throw fail("log.level", "'\(level)' is not one of \(Self.levelNames)")
                }
                logLevel = parsed
            }
            if let format = log.format {
                guard let parsed = LogFormat(rawValue: format) else {
                    throw fail("log.format", "'\(format)' is not one of text, json")
                }
                logFormat = parsed
            }
        }
        if case .object(let sections) = root, let providers = sections["providers"] {
            do {
                self.providers = try catalog.parse(providers)
            } catch {
                throw fail(error.key, error.problem)
            }
        }
        for (index, rule) in (file.access ?? []).enumerated() {
            let key = "access[\(index)]"
            let subject: AccessPolicy.Rule.Subject
            switch (rule.user, rule.group) {
            case (let user?, nil): subject = .user(try Self.resolveUser(user, key: key + ".user", path: path))
            case (nil, let group?): subject = .group(try Self.resolveGroup(group, key: key + ".group", path: path))
            default: throw fail(key, "give exactly one of \"user\" or \"group\"")
            }
            var permissions: Set<Permission> = []
            for permission in rule.permissions {
                guard let parsed = Permission(rawValue: permission) else {
                    throw fail(
                        key + ".permissions",
                        "'\(permission)' is not one of \(Permission.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                permissions.insert(parsed)
            }
            guard !rule.namespaces.isEmpty else {
                throw fail(key + ".namespaces", "must name at least one namespace or \"*\"")
            }
            rules.append(.init(subject: subject, namespaces: Set(rule.namespaces), permissions: permissions))
        }
    }

    /// `TOKENVAULT_*` environment variables override the file: `TOKENVAULT_SOCKET_MODE`,
    /// `TOKENVAULT_SOCKET_GROUP`, `TOKENVAULT_MAX_BODY_BYTES`, `TOKENVAULT_IDLE_TIMEOUT_SECONDS`,
    /// `TOKENVAULT_EVENT_LOOPS`, `TOKENVAULT_GROUP_REFRESH_SECONDS`, `TOKENVAULT_PROVIDERS` (comma-separated).
    /// (`TOKENVAULT_SOCKET` is read by `serve`.)
    public mutating func applyEnvironment(_ environment: [String: String]) throws {
        func fail(_ name: String, _ problem: String) -> ConfigurationError {
            ConfigurationError(file: "environment", key: name, problem: problem)
        }
        if let mode = environment["TOKENVAULT_SOCKET_MODE"] {
            guard let parsed = mode_t(mode, radix: 8), parsed & ~0o770 == 0 else {
                throw fail("TOKENVAULT_SOCKET_MODE", "'\(mode)' must be an octal mode without access for others")
            }
            socketMode = parsed
        }
        if let group = environment["TOKENVAULT_SOCKET_GROUP"] { socketGroup = group }
        if let level = environment["TOKENVAULT_LOG_LEVEL"] {
            guard let parsed = Logger.Level(rawValue: level) else {
                throw fail("TOKENVAULT_LOG_LEVEL", "'\(level)' is not one of \(Self.levelNames)")
            }
            logLevel = parsed
        }
        if let format = environment["TOKENVAULT_LOG_FORMAT"] {
            guard let parsed = LogFormat(rawValue: format) else {
                throw fail("TOKENVAULT_LOG_FORMAT", "'\(format)' is not one of text, json")
            }
            logFormat = parsed
        }
        try applySettings(environment: environment)
        if let names = environment["TOKENVAULT_PROVIDERS"] {
            // Names only: a listed instance keeps its settings from the file; others are dropped.
            var selected: [String: ProviderSettings] = [:]
            for name in names.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                if let configured = providers[name] {
                    selected[name] = configured
                    continue
                }
                do throws(ProviderConfigurationError) {
                    selected[name] = try catalog.nameOnly(name, key: "TOKENVAULT_PROVIDERS")
                } catch {
                    throw fail("TOKENVAULT_PROVIDERS", error.problem)
                }
            }
            providers = selected
        }
    }

    static let levelNames = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")

    static func resolveUser(_ value: NameOrID, key: String, path: String) throws -> UInt32 {
        switch value {
        case .id(let id): return id
        case .name(let name):
            guard let entry = getpwnam(name) else {
                throw ConfigurationError(file: path, key: key, problem: "no user named '\(name)'")
            }
            return entry.pointee.pw_uid
        }
    }

    static func resolveGroup(_ value: NameOrID, key: String, path: String) throws -> UInt32 {
        switch value {
        case .id(let id): return id
        case .name(let name):
            guard let entry = getgrnam(name) else {
                throw ConfigurationError(file: path, key: key, problem: "no group named '\(name)'")
            }
            return entry.pointee.gr_gid
        }
    }
}

/// A configuration problem, naming the file and the key.
public struct ConfigurationError: Error, CustomStringConvertible {
    public let file: String
    public let key: String?
    public let problem: String

    init(file: String, key: String?, problem: String) {
        self.file = file
        self.key = key
        self.problem = problem
    }

    init(file: String, decodingError: DecodingError) {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
                .trimmingCharacters(in: CharacterSet(charactersIn: "."))
        }
        switch decodingError {
        case .typeMismatch(let type, let context):
            self.init(file: file, key: path(context.codingPath), problem: "expected \(type)")
        case .valueNotFound(let type, let context):
            self.init(file: file, key: path(context.codingPath), problem: "expected \(type), found null")
        case .keyNotFound(let key, let context):
            self.init(file: file, key: path(context.codingPath + [key]), problem: "is required")
        case .dataCorrupted(let context):
            self.init(file: file, key: path(context.codingPath), problem: "is not valid JSON")
        @unknown default:
            self.init(file: file, key: nil, problem: "cannot be decoded")
        }
    }

    public var description: String {
        "config \(file): " + (key.map { $0.isEmpty ? "" : "\($0): " } ?? "") + problem
    }
}

extension JSONValue {
    /// The value with every object key that begins with `//` removed: JSON has no comments, so a
    /// configuration file carries them as `"//": "…"` members.
    var withoutComments: JSONValue {
        switch self {
        case .object(let members):
            return .object(members.filter { !$0.key.hasPrefix("//") }.mapValues(\.withoutComments))
        case .array(let values): return .array(values.map(\.withoutComments))
        default: return self
        }
    }
}
