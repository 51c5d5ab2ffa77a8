import TokenVaultCore

/// Builds the `TokenProvider` for one configured provider instance, by kind.
public enum ProviderFactory {
    /// Kinds with a token endpoint. An instance of one of these without options is a name-only
    /// provider (its credentials are stored, never refreshed).
    public static let supportedKinds: Set<String> = ["oauth2", "tinkoff-id", "sber-id", "esia"]
    /// Kinds that never have a provider: EBS results (`verify_token`) cannot be refreshed or
    /// revoked. Their only option is read by the engine.
    public static let storeOnlyKinds: Set<String> = ["ebs"]
    /// The options a store-only kind may have (`expired_unit`: how EBS's `expired` is read).
    public static let storeOnlyOptions: Set<String> = ["expired_unit"]

    /// The provider, or nil for a name-only instance (no endpoint at all). Every configuration
    /// problem is thrown with its key.
    public static func make(
        _ settings: ProviderSettings, environment: [String: String]
    ) throws(ProviderConfigurationError) -> (any TokenProvider)? {
        switch settings.kind {
        case "oauth2":
            guard let configuration = try OAuth2Configuration.parse(settings, environment: environment) else {
                return nil
            }
            return try OAuth2Provider(configuration: configuration)
        case "tinkoff-id":
            return try TinkoffIDConfiguration.parse(settings, environment: environment).map {
                TinkoffIDProvider(configuration: $0)
            }
        case "sber-id":
            return try SberIDConfiguration.parse(settings, environment: environment).map {
                SberIDProvider(configuration: $0)
            }
        case "esia":
            return try ESIAConfiguration.parse(settings, environment: environment).map {
                ESIAProvider(configuration: $0)
            }
        case let kind where storeOnlyKinds.contains(kind):
            try checkStoreOnly(settings)
            return nil
        default:
            let known = (supportedKinds.union(storeOnlyKinds)).sorted().joined(separator: ", ")
            throw ProviderConfigurationError(
                key: "providers.\(settings.name).kind",
                problem: "unknown provider kind '\(settings.kind.prefix(64))' (known: \(known))")
        }
    }

    /// `ebs` may only say how its `expired` field is read; anything else would be silently unused.
    private static func checkStoreOnly(_ settings: ProviderSettings) throws(ProviderConfigurationError) {
        if let unknown = settings.options.keys.filter({ !storeOnlyOptions.contains($0) }).sorted().first {
            throw .option(
                settings.name, unknown,
                "kind '\(settings.kind)' has no token endpoint (its results are never refreshed or revoked); its "
                    + "only option is \(storeOnlyOptions.sorted().joined(separator: ", "))")
        }
        switch settings.options["expired_unit"] {
        case nil, .null?:
            return
        case .string(let unit)? where expiredUnits.contains(unit):
            return
        default:
            throw .option(
                settings.name, "expired_unit", "must be one of \(expiredUnits.joined(separator: ", "))")
        }
    }

    /// How EBS's `expired` is read (docs/providers/ebs.md); the engine applies it.
    public static let expiredUnits = ["seconds", "unix_seconds", "unix_milliseconds", "milliseconds"]
}
