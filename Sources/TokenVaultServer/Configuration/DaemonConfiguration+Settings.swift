import TokenVaultCore

/// The daemon's numeric and on/off settings, in one table: the key in the file, the environment
/// variable that overrides it, the range it must fall in, and where it goes. Reading the file and
/// the environment both walk the table, so a setting cannot be readable in one and not the other,
/// and a key nobody knows (a typo) is an error naming it, not a silent default.
extension DaemonConfiguration {
    struct IntegerSetting {
        let key: String
        let environment: String?
        let range: ClosedRange<Int>
        let field: WritableKeyPath<DaemonConfiguration, Int>
    }

    struct FlagSetting {
        let key: String
        let environment: String?
        let field: WritableKeyPath<DaemonConfiguration, Bool>
    }

    static var integerSettings: [IntegerSetting] {
        [
            .init(
                key: "limits.max_body_bytes", environment: "TOKENVAULT_MAX_BODY_BYTES", range: 1024...(16 << 20),
                field: \.maximumBodySize),
            .init(
                key: "limits.idle_timeout_seconds", environment: "TOKENVAULT_IDLE_TIMEOUT_SECONDS", range: 1...3600,
                field: \.idleTimeoutSeconds),
            .init(
                key: "limits.max_connections", environment: "TOKENVAULT_MAX_CONNECTIONS", range: 1...1_000_000,
                field: \.connections.maximum),
            .init(
                key: "limits.max_connections_per_uid", environment: "TOKENVAULT_MAX_CONNECTIONS_PER_UID",
                range: 1...1_000_000, field: \.connections.maximumPerUID),
            .init(
                key: "limits.request_head_seconds", environment: nil, range: 1...3600,
                field: \.connections.requestHeadSeconds),
            .init(
                key: "limits.min_body_bytes_per_second", environment: nil, range: 1...(1 << 30),
                field: \.connections.minimumBodyBytesPerSecond),
            .init(
                key: "limits.max_streams_per_uid", environment: nil, range: 1...100_000,
                field: \.connections.maximumStreamsPerUID),
            .init(
                key: "limits.max_proxy_calls_per_uid", environment: nil, range: 1...100_000,
                field: \.connections.maximumProxyCallsPerUID),
            .init(
                key: "limits.stream_heartbeat_seconds", environment: nil, range: 1...3600,
                field: \.connections.streamHeartbeatSeconds),
            .init(
                key: "limits.max_access_token_bytes", environment: nil, range: 64...(1 << 20),
                field: \.tokenSizes.accessToken),
            .init(
                key: "limits.max_refresh_token_bytes", environment: nil, range: 64...(1 << 20),
                field: \.tokenSizes.refreshToken),
            .init(
                key: "limits.max_id_token_bytes", environment: nil, range: 64...(1 << 20),
                field: \.tokenSizes.idToken),
            .init(
                key: "limits.on_demand_refresh_seconds", environment: nil, range: 1...86_400,
                field: \.onDemandRefreshSeconds),
            .init(
                key: "limits.lease_seconds", environment: "TOKENVAULT_LEASE_SECONDS", range: 2...86_400,
                field: \.leaseSeconds),
            .init(
                key: "limits.max_clock_offset_seconds", environment: "TOKENVAULT_MAX_CLOCK_OFFSET_SECONDS",
                range: 1...3600, field: \.maximumClockOffsetSeconds),
            .init(
                key: "limits.retain_answers_seconds", environment: "TOKENVAULT_RETAIN_ANSWERS_SECONDS",
                range: 0...86_400, field: \.retainAnswersSeconds),
            .init(
                key: "server.event_loops", environment: "TOKENVAULT_EVENT_LOOPS", range: 1...256, field: \.eventLoops),
            .init(
                key: "server.group_refresh_seconds", environment: "TOKENVAULT_GROUP_REFRESH_SECONDS",
                range: 1...86_400, field: \.groupRefreshSeconds),
            .init(
                key: "audit.read_interval_seconds", environment: nil, range: 1...86_400,
                field: \.audit.readIntervalSeconds),
            .init(key: "audit.retention_days", environment: nil, range: 1...36_500, field: \.audit.retentionDays),
            .init(key: "audit.max_rows", environment: nil, range: 1000...1_000_000_000, field: \.audit.maximumRows),
            .init(
                key: "proxy.max_request_bytes", environment: nil, range: 0...(1 << 40),
                field: \.proxy.maximumRequestBytes),
            .init(
                key: "proxy.max_response_bytes", environment: nil, range: 0...(1 << 40),
                field: \.proxy.maximumResponseBytes),
            .init(
                key: "proxy.replay_body_bytes", environment: nil, range: 0...(64 << 20),
                field: \.proxy.replayBodyBytes),
            .init(key: "proxy.deadline_seconds", environment: nil, range: 1...86_400, field: \.proxy.deadlineSeconds),
            .init(key: "proxy.min_ttl_seconds", environment: nil, range: 0...86_400, field: \.proxy.minimumTTLSeconds),
            .init(
                key: "webhooks.failing_after_seconds", environment: nil, range: 0...(30 * 86_400),
                field: \.webhooks.failingAfterSeconds),
            .init(
                key: "webhooks.retry_for_seconds", environment: nil, range: 1...(30 * 86_400),
                field: \.webhooks.retryForSeconds),
            .init(
                key: "webhooks.retry_base_seconds", environment: nil, range: 1...86_400,
                field: \.webhooks.retryBaseSeconds),
            .init(
                key: "webhooks.retry_cap_seconds", environment: nil, range: 1...86_400,
                field: \.webhooks.retryCapSeconds),
            .init(key: "sign_in.expiry_seconds", environment: nil, range: 10...86_400, field: \.signInExpirySeconds),
            .init(
                key: "sign_in.max_pending_per_uid", environment: nil, range: 1...100_000,
                field: \.signInMaximumPendingPerUID),
            .init(
                key: "sign_in.device_max_seconds", environment: nil, range: 10...86_400,
                field: \.signInDeviceMaximumSeconds),
            .init(
                key: "sign_in.device_claim_seconds", environment: nil, range: 30...3600,
                field: \.signInDeviceClaimSeconds),
            .init(key: "webhooks.timeout_seconds", environment: nil, range: 1...600, field: \.webhooks.timeoutSeconds),
            .init(
                key: "webhooks.max_concurrent_deliveries", environment: nil, range: 1...256,
                field: \.webhooks.maximumConcurrentDeliveries),
        ]
    }

    static var flagSettings: [FlagSetting] {
        [.init(key: "server.core_dumps", environment: "TOKENVAULT_CORE_DUMPS", field: \.coreDumps)]
    }

    /// Sections whose keys all come from the tables above.
    static let tabledSections: Set<String> = ["limits", "server", "audit", "proxy", "webhooks", "sign_in"]
    static let topLevelKeys: Set<String> = [
        "socket", "limits", "server", "audit", "storage", "providers", "access", "log", "webhooks", "sign_in",
    ]

    /// Applies the tabled settings of a configuration file and refuses keys nobody reads.
    mutating func applySettings(_ root: JSONValue, path: String) throws {
        guard case .object(let sections) = root else {
            throw ConfigurationError(file: path, key: nil, problem: "must be a JSON object")
        }
        if let unknown = Set(sections.keys).subtracting(Self.topLevelKeys).sorted().first {
            throw ConfigurationError(file: path, key: unknown, problem: "is not a known section")
        }
        let known =
            Set(Self.integerSettings.map(\.key)).union(Self.flagSettings.map(\.key)).union([
                "socket.path", "socket.mode", "socket.group", "log.level", "log.format", "webhooks.endpoints",
            ])
        for (section, value) in sections
        where Self.tabledSections.contains(section) || ["socket", "log"].contains(section) {
            guard case .object(let members) = value else {
                throw ConfigurationError(file: path, key: section, problem: "expected an object")
            }
            if let unknown = members.keys.map({ "\(section).\($0)" }).filter({ !known.contains($0) }).sorted().first {
                throw ConfigurationError(file: path, key: unknown, problem: "is not a known setting")
            }
        }
        func lookUp(_ key: String) -> JSONValue? {
            let parts = key.split(separator: ".", maxSplits: 1).map(String.init)
            guard case .object(let members)? = sections[parts[0]] else { return nil }
            return members[parts[1]]
        }
        for setting in Self.integerSettings {
            guard let value = lookUp(setting.key) else { continue }
            guard case .integer(let number) = value, let exact = Int(exactly: number) else {
                throw ConfigurationError(file: path, key: setting.key, problem: "expected an integer")
            }
            guard setting.range.contains(exact) else {
                throw ConfigurationError(file: path, key: setting.key, problem: Self.rangeProblem(setting.range))
            }
            self[keyPath: setting.field] = exact
        }
        for setting in Self.flagSettings {
            guard let value = lookUp(setting.key) else { continue }
            guard case .bool(let flag) = value else {
                throw ConfigurationError(file: path, key: setting.key, problem: "expected true or false")
            }
            self[keyPath: setting.field] = flag
        }
    }

    /// Applies the tabled settings' environment variables.
    mutating func applySettings(environment: [String: String]) throws {
        for setting in Self.integerSettings {
            guard let name = setting.environment, let text = environment[name] else { continue }
            guard let number = Int(text), setting.range.contains(number) else {
                throw ConfigurationError(file: "environment", key: name, problem: Self.rangeProblem(setting.range))
            }
            self[keyPath: setting.field] = number
        }
        for setting in Self.flagSettings {
            guard let name = setting.environment, let text = environment[name] else { continue }
            switch text.lowercased() {
            case "1", "true", "yes": self[keyPath: setting.field] = true
            case "0", "false", "no": self[keyPath: setting.field] = false
            default: throw ConfigurationError(file: "environment", key: name, problem: "must be true or false")
            }
        }
    }

    private static func rangeProblem(_ range: ClosedRange<Int>) -> String {
        "must be \(range.lowerBound)-\(range.upperBound)"
    }
}

/// What one caller may hold open and how fast it must send (`limits.*`).
public struct ConnectionLimits: Sendable, Equatable {
    /// Connections open at once, over all callers; more are answered 503 and closed.
    public var maximum = 4096
    /// Connections open at once from one uid.
    public var maximumPerUID = 1024
    /// A request's head must arrive in full within this many seconds of its first byte.
    public var requestHeadSeconds = 10
    /// A request body must arrive at least this fast (after a 5-second grace), or the connection
    /// is closed: a body sent a byte at a time cannot hold a connection open for ever.
    public var minimumBodyBytesPerSecond = 1024
    /// `watch` and `events` streams open at once from one uid.
    public var maximumStreamsPerUID = 16
    /// Proxied calls in flight at once from one uid (their answers may still be streaming).
    public var maximumProxyCallsPerUID = 16
    /// An empty line on every open stream this often: it keeps proxies from timing the stream
    /// out and finds callers that went away.
    public var streamHeartbeatSeconds = 15

    public init() {}
}

/// What the proxy lets through and how long it waits (`proxy.*`).
public struct ProxySettings: Sendable, Equatable {
    /// A request body larger than this is refused (413) or, streaming, cut off.
    public var maximumRequestBytes = 64 << 20
    /// An answer declaring a larger body is refused (502); one streaming past it is cut off.
    public var maximumResponseBytes = 256 << 20
    /// A request body up to this size is kept, so the call can be replayed once after a 401
    /// and a refresh; a larger one streams through and a 401 is returned as it came.
    public var replayBodyBytes = 1 << 20
    /// The whole call, answer streamed back included.
    public var deadlineSeconds = 120
    /// The token attached has at least this many seconds left (refreshed first otherwise), so
    /// it does not expire on the way.
    public var minimumTTLSeconds = 10

    public init() {}
}

/// How the audit trail keeps token reads and how long it keeps rows (`audit.*`).
public struct AuditSettings: Sendable, Equatable {
    /// Token reads are one row per caller (uid, pid), credential and outcome per this many
    /// seconds, with a count.
    public var readIntervalSeconds = 60
    /// Rows older than this are pruned.
    public var retentionDays = 90
    /// Rows beyond this many (the oldest first) are pruned.
    public var maximumRows = 1_000_000

    public init() {}
}
