/// What the daemon's configuration needs to know about provider instances, answered in one
/// place (TokenVaultProviders' `ProviderKinds`): the kinds, the instance-name rule, how the
/// `providers` section reads, `expired_unit`. The server's configuration takes one, so those
/// rules are not repeated outside the Providers module.
public protocol ProviderCatalog: Sendable {
    /// The instances a daemon without a `providers` section knows: one name-only instance per kind.
    var defaultInstances: [String: ProviderSettings] { get }
    /// Reads a `providers` section (an object of instances, or the older list of names).
    func parse(_ section: JSONValue) throws(ProviderConfigurationError) -> [String: ProviderSettings]
    /// An instance declared by name only (`TOKENVAULT_PROVIDERS`); `key` names where it came from.
    func nameOnly(_ name: String, key: String) throws(ProviderConfigurationError) -> ProviderSettings
}
