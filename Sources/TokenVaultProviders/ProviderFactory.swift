import TokenVaultCore

/// Builds the `TokenProvider` for one configured provider instance, by kind.
public enum ProviderFactory {
    /// Kinds known to the daemon whose protocol is not implemented yet. An instance of one of
    /// these without options is a name-only provider (its credentials are stored, never
    /// refreshed); with options, start-up stops rather than silently ignoring them.
    public static let plannedKinds: Set<String> = ["tinkoff-id", "sber-id", "esia", "ebs"]
    public static let supportedKinds: Set<String> = ["oauth2"]

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
        case let kind where plannedKinds.contains(kind):
            guard settings.options.isEmpty else {
                throw ProviderConfigurationError(
                    key: "providers.\(settings.name).kind",
                    problem: "kind '\(kind)' is not supported yet: remove its options to store credentials "
                        + "without refreshing them, or describe the token endpoint with kind 'oauth2'")
            }
            return nil
        default:
            let known = (supportedKinds.union(plannedKinds)).sorted().joined(separator: ", ")
            throw ProviderConfigurationError(
                key: "providers.\(settings.name).kind",
                problem: "unknown provider kind '\(settings.kind.prefix(64))' (known: \(known))")
        }
    }
}
