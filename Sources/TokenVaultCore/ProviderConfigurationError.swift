/// A `providers` problem: the key (`providers.acme.limits.burst`) and what is wrong. The one error
/// type of provider configuration, from the section's parsing (`ProviderCatalog`) to building
/// instances (`ProviderFactory`, `ProviderBuilding`) and the courier's transports; raised when
/// the daemon starts or reloads, so an operator sees the exact key and the fix before any
/// refresh is attempted.
public struct ProviderConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The full key path, e.g. `providers.acme.token_endpoint`.
    public var key: String
    /// What is wrong and, where there is one, the fix. Never contains a secret.
    public var problem: String

    public init(key: String, problem: String) {
        self.key = key
        self.problem = problem
    }

    public var description: String { "\(key): \(problem)" }
}

extension ProviderConfigurationError {
    /// The key path of option `option` of provider instance `provider`.
    public static func option(_ provider: String, _ option: String, _ problem: String) -> ProviderConfigurationError {
        ProviderConfigurationError(key: "providers.\(provider).\(option)", problem: problem)
    }
}
