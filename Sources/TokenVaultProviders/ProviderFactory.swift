import TokenVaultCore

/// Builds the `TokenProvider` for one configured provider instance, by kind (`ProviderKinds`
/// lists the kinds and reads the settings every kind shares).
public enum ProviderFactory {
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
