import TokenVaultCore

/// The provider kinds and the rules of the config file's `providers` section, in one place: the
/// kinds (`ProviderFactory` builds them), the instance-name rule, the engine's part of an
/// instance (`kind`, `refresh`, `limits`, `expired_unit`), read into `ProviderSettings`; the
/// kind-specific rest (endpoints, client, TLS) is passed on as `options` for `ProviderFactory`
/// to check. Errors name the key.
///
/// ```json
/// "providers": {
///   "acme": {
///     "kind": "oauth2", "token_endpoint": "https://id.example/token", "client_id": "vault",
///     "refresh": {"lifetime_share": 0.75, "margin_seconds": 60, "jitter": 0.1, "default_lifetime_seconds": 3600},
///     "limits": {"concurrency": 8, "rate_per_second": 20, "burst": 20, "breaker_failures": 5,
///                "breaker_cooldown_seconds": 30, "misconfigured_probe_seconds": 300,
///                "retry_base_seconds": 1, "retry_cap_seconds": 300}
///   }
/// }
/// ```
/// The older form, a list of names (`["tinkoff-id", "oauth2"]`), declares name-only instances:
/// credentials may name them, nothing refreshes them.
public struct ProviderKinds: ProviderCatalog {
    /// Kinds with a token endpoint. An instance of one of these without options is a name-only
    /// provider (its credentials are stored, never refreshed).
    public static let refreshable: Set<String> = ["oauth2", "tinkoff-id", "sber-id", "esia"]
    /// Kinds that never have a provider: EBS results (`verify_token`) cannot be refreshed or
    /// revoked. Their only option, `expired_unit`, is the engine's.
    public static let storeOnly: Set<String> = ["ebs"]
    public static let all = refreshable.union(storeOnly)

    public init() {}

    public var defaultInstances: [String: ProviderSettings] {
        Dictionary(uniqueKeysWithValues: Self.all.map { ($0, ProviderSettings(name: $0, kind: $0)) })
    }

    public func parse(_ section: JSONValue) throws(ProviderConfigurationError) -> [String: ProviderSettings] {
        try Self.parse(section)
    }

    public func nameOnly(_ name: String, key: String) throws(ProviderConfigurationError) -> ProviderSettings {
        try Self.validateName(name, key: key)
        return Self.nameOnly(name)
    }

    static func parse(_ value: JSONValue) throws(ProviderConfigurationError) -> [String: ProviderSettings] {
        switch value {
        case .array(let names):
            var result: [String: ProviderSettings] = [:]
            for (index, name) in names.enumerated() {
                guard case .string(let name) = name else {
                    throw ProviderConfigurationError(key: "providers[\(index)]", problem: "expected a name")
                }
                try validateName(name, key: "providers[\(index)]")
                result[name] = nameOnly(name)
            }
            return result
        case .object(let instances):
            var result: [String: ProviderSettings] = [:]
            for (name, body) in instances {
                result[name] = try instance(name, body)
            }
            return result
        default:
            throw ProviderConfigurationError(
                key: "providers", problem: "expected an object of provider instances (or a list of names)")
        }
    }

    /// An instance declared by name only: its kind is its name if that is a kind, else `oauth2`.
    static func nameOnly(_ name: String) -> ProviderSettings {
        ProviderSettings(name: name, kind: all.contains(name) ? name : "oauth2")
    }

    /// The instance-name rule: what credentials may name as `provider` (1-64 of a-z, 0-9, `-_.`).
    public static func validateName(_ name: String, key: String) throws(ProviderConfigurationError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-_.")
        guard (1...64).contains(name.count), name.allSatisfy(allowed.contains) else {
            throw ProviderConfigurationError(
                key: key, problem: "'\(name)' is not a provider name (1-64 of a-z, 0-9, '-', '_', '.')")
        }
    }

    private static func instance(_ name: String, _ body: JSONValue) throws(ProviderConfigurationError)
        -> ProviderSettings
    {
        let key = "providers.\(name)"
        try validateName(name, key: key)
        guard case .object(var options) = body else {
            throw ProviderConfigurationError(key: key, problem: "expected an object")
        }
        let kind: String
        switch options.removeValue(forKey: "kind") {
        case .string(let value)?:
            guard Self.all.contains(value) else {
                throw ProviderConfigurationError(
                    key: key + ".kind", problem: "'\(value)' is not one of \(Self.all.sorted().joined(separator: ", "))"
                )
            }
            kind = value
        case nil:
            guard Self.all.contains(name) else {
                throw ProviderConfigurationError(
                    key: key + ".kind", problem: "is required (one of \(Self.all.sorted().joined(separator: ", ")))")
            }
            kind = name
        default:
            throw ProviderConfigurationError(key: key + ".kind", problem: "expected a string")
        }
        var settings = ProviderSettings(name: name, kind: kind)
        if let refresh = options.removeValue(forKey: "refresh") {
            let fields = try Fields(refresh, key: key + ".refresh")
            settings.planner = RefreshPlanner(
                lifetimeShare: try fields.number("lifetime_share", default: 0.75, in: 0.05...1),
                margin: try fields.number("margin_seconds", default: 60, in: 0...86_400),
                jitterFraction: try fields.number("jitter", default: 0.1, in: 0...0.5),
                defaultLifetime: try fields.number("default_lifetime_seconds", default: 3600, in: 1...31_536_000))
            try fields.rejectUnknown()
        }
        if let limits = options.removeValue(forKey: "limits") {
            let fields = try Fields(limits, key: key + ".limits")
            let defaults = ProviderLimits()
            settings.limits = ProviderLimits(
                concurrency: Int(try fields.number("concurrency", default: Double(defaults.concurrency), in: 1...1024)),
                ratePerSecond: try fields.number(
                    "rate_per_second", default: defaults.ratePerSecond, in: 0.001...100_000),
                burst: Int(try fields.number("burst", default: Double(defaults.burst), in: 1...100_000)),
                breakerThreshold: Int(
                    try fields.number("breaker_failures", default: Double(defaults.breakerThreshold), in: 1...1000)),
                breakerCooldown: try fields.number(
                    "breaker_cooldown_seconds", default: defaults.breakerCooldown, in: 0.1...86_400),
                misconfiguredProbeInterval: try fields.number(
                    "misconfigured_probe_seconds", default: defaults.misconfiguredProbeInterval, in: 1...86_400),
                misconfiguredCredentials: Int(
                    try fields.number(
                        "misconfigured_credentials", default: Double(defaults.misconfiguredCredentials),
                        in: 1...1000)),
                retry: RetryPolicy(
                    base: try fields.number("retry_base_seconds", default: defaults.retry.base, in: 0.01...3600),
                    cap: try fields.number("retry_cap_seconds", default: defaults.retry.cap, in: 0.1...86_400)))
            try fields.rejectUnknown()
        }
        switch options.removeValue(forKey: "expired_unit") {
        case nil: break
        case .string(let text)? where ExpiredUnit(rawValue: text) != nil:
            settings.expiredUnit = ExpiredUnit(rawValue: text)!
        default:
            throw ProviderConfigurationError(
                key: key + ".expired_unit",
                problem: "must be one of \(ExpiredUnit.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        switch options.removeValue(forKey: "api_base_urls") {
        case nil: break
        case .array(let values)?:
            for (index, value) in values.enumerated() {
                // A base URL, or `{"url": …, "audience": …}`: calls under it carry a token derived
                // for the audience (RFC 8693) instead of the credential's own.
                let text: String
                var audience: String?
                switch value {
                case .string(let url): text = url
                case .object(let members)
                where Set(members.keys).isSubset(of: ["url", "audience"]):
                    guard case .string(let url)? = members["url"] else { fallthrough }
                    text = url
                    if let named = members["audience"] {
                        guard settings.kind == OAuth2Wire.kind else {
                            throw ProviderConfigurationError(
                                key: key + ".api_base_urls[\(index)].audience",
                                problem: "only an oauth2 instance derives tokens for an audience (RFC 8693)")
                        }
                        guard case .string(let name) = named, !name.isEmpty else {
                            throw ProviderConfigurationError(
                                key: key + ".api_base_urls[\(index)].audience", problem: "expected a non-empty string")
                        }
                        audience = name
                    }
                default:
                    throw ProviderConfigurationError(
                        key: key + ".api_base_urls[\(index)]",
                        problem: "expected a base URL, or an object with url and audience")
                }
                do {
                    settings.apiBases.append(try APIBase(parsing: text, audience: audience))
                } catch {
                    throw ProviderConfigurationError(key: key + ".api_base_urls[\(index)]", problem: error.problem)
                }
            }
        default:
            throw ProviderConfigurationError(
                key: key + ".api_base_urls", problem: "expected a list of base URLs (https://host[:port]/prefix)")
        }
        switch options.removeValue(forKey: "proxy_headers") {
        case nil: break
        case .array(let values)?:
            for (index, value) in values.enumerated() {
                guard case .string(let name) = value, HTTPToken.isToken(name) else {
                    throw ProviderConfigurationError(
                        key: key + ".proxy_headers[\(index)]", problem: "expected a header name")
                }
                let lowered = name.lowercased()
                if let refusal = ForwardedHeaders.refusal(of: lowered) {
                    throw ProviderConfigurationError(
                        key: key + ".proxy_headers[\(index)]", problem: "\(name) is never forwarded: \(refusal)")
                }
                settings.proxyHeaders.insert(lowered)
            }
        default:
            throw ProviderConfigurationError(
                key: key + ".proxy_headers", problem: "expected a list of header names")
        }
        switch options.removeValue(forKey: "dpop") {
        case nil: break
        case .bool(let value)?: settings.dpop = value
        default: throw ProviderConfigurationError(key: key + ".dpop", problem: "expected true or false")
        }
        settings.options = options
        return settings
    }

    /// A JSON object read field by field, so that a misspelt key is reported, not ignored.
    private final class Fields {
        let values: [String: JSONValue]
        let key: String
        var read: Set<String> = []

        init(_ value: JSONValue, key: String) throws(ProviderConfigurationError) {
            guard case .object(let values) = value else {
                throw ProviderConfigurationError(key: key, problem: "expected an object")
            }
            self.values = values
            self.key = key
        }

        func number(_ name: String, default fallback: Double, in range: ClosedRange<Double>)
            throws(ProviderConfigurationError) -> Double
        {
            read.insert(name)
            let number: Double
            switch values[name] {
            case nil: return fallback
            case .integer(let value)?: number = Double(value)
            case .number(let value)?: number = value
            default: throw ProviderConfigurationError(key: "\(key).\(name)", problem: "expected a number")
            }
            guard range.contains(number) else {
                throw ProviderConfigurationError(
                    key: "\(key).\(name)", problem: "must be between \(range.lowerBound) and \(range.upperBound)")
            }
            return number
        }

        func rejectUnknown() throws(ProviderConfigurationError) {
            if let unknown = Set(values.keys).subtracting(read).sorted().first {
                throw ProviderConfigurationError(key: "\(key).\(unknown)", problem: "is not a known setting")
            }
        }
    }
}
