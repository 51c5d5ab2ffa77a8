import TokenVaultCore

/// Builds the `TokenProvider` for one configured provider instance, by kind (`ProviderKinds`
/// lists the kinds and reads the settings every kind shares).
public enum ProviderFactory {
    /// The provider, or nil for a name-only instance (no endpoint at all). Every configuration
    /// problem is thrown with its key. `transport` makes how its requests leave (direct by default;
    /// the daemon's go through the courier).
    public static func make(
        _ settings: ProviderSettings, environment: [String: String],
        transport: TransportMaker = { _, settings in DirectTransport(settings: settings) }
    ) throws(ProviderConfigurationError) -> (any TokenProvider)? {
        guard let configuration = try parse(settings, environment: environment) else { return nil }
        let made = transport(settings, configuration.transportSettings)
        switch configuration {
        case .oauth2(let configuration): return try OAuth2Provider(configuration: configuration, transport: made)
        case .tinkoffID(let configuration): return TinkoffIDProvider(configuration: configuration, transport: made)
        case .sberID(let configuration): return SberIDProvider(configuration: configuration, transport: made)
        case .esia(let configuration): return ESIAProvider(configuration: configuration, transport: made)
        }
    }

    /// What a transport for the instance needs (timeouts, CA file, client certificate), or nil for
    /// a name-only or store-only instance. Read from the transport's own options alone: the
    /// courier builds its transports this way, so it reads no client secret and needs no
    /// environment (no `CREDENTIALS_DIRECTORY`); the daemon has checked the whole configuration.
    public static func transportSettings(
        _ settings: ProviderSettings
    ) throws(ProviderConfigurationError) -> TransportSettings? {
        guard !settings.options.isEmpty, !ProviderKinds.storeOnly.contains(settings.kind) else { return nil }
        return try OptionReader(settings).transportSettings(settings.limits)
    }

    /// One instance's configuration, read by its kind.
    enum Configuration {
        case oauth2(OAuth2Configuration)
        case tinkoffID(TinkoffIDConfiguration)
        case sberID(SberIDConfiguration)
        case esia(ESIAConfiguration)

        var transportSettings: TransportSettings {
            switch self {
            case .oauth2(let configuration): configuration.httpSettings
            case .tinkoffID(let configuration): configuration.httpSettings
            case .sberID(let configuration): configuration.httpSettings
            case .esia(let configuration): configuration.httpSettings
            }
        }
    }

    static func parse(
        _ settings: ProviderSettings, environment: [String: String]
    ) throws(ProviderConfigurationError) -> Configuration? {
        switch settings.kind {
        case "oauth2": return try OAuth2Configuration.parse(settings, environment: environment).map { .oauth2($0) }
        case "tinkoff-id":
            return try TinkoffIDConfiguration.parse(settings, environment: environment).map { .tinkoffID($0) }
        case "sber-id": return try SberIDConfiguration.parse(settings, environment: environment).map { .sberID($0) }
        case "esia": return try ESIAConfiguration.parse(settings, environment: environment).map { .esia($0) }
        case let kind where ProviderKinds.storeOnly.contains(kind):
            try checkStoreOnly(settings)
            return nil
        default:
            let known = ProviderKinds.all.sorted().joined(separator: ", ")
            throw ProviderConfigurationError(
                key: "providers.\(settings.name).kind",
                problem: "unknown provider kind '\(settings.kind.prefix(64))' (known: \(known))")
        }
    }

    /// `ebs` has no options of its own: its only setting, `expired_unit`, is the engine's and was
    /// read with the others (`ProviderKinds`); anything else would be silently unused.
    private static func checkStoreOnly(_ settings: ProviderSettings) throws(ProviderConfigurationError) {
        if let unknown = settings.options.keys.sorted().first {
            throw .option(
                settings.name, unknown,
                "kind '\(settings.kind)' has no token endpoint (its results are never refreshed or revoked); its "
                    + "only option is expired_unit")
        }
    }
}
