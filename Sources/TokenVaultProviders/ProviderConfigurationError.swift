/// A provider instance's configuration cannot work. Raised when the daemon starts, so an
/// operator sees the exact key and the fix before any refresh is attempted.
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
    static func option(_ provider: String, _ option: String, _ problem: String) -> ProviderConfigurationError {
        ProviderConfigurationError(key: "providers.\(provider).\(option)", problem: problem)
    }
}
