/// The daemon's provider instances as one immutable value: how each instance credentials may name
/// is configured (planner, limits, `expired_unit`, options) and the provider object of each that
/// has endpoints. Built whole at start-up and at every reload (`ProviderBuilding`), put in force
/// whole (`ProviderRouting.install`, which swaps the engine's slots and the vault's table in one
/// step), and read whole: a request or a refresh takes the table (or the engine's slot) once and
/// uses what it took, so nothing ever sees one instance's new provider with its old planner.
public final class ProviderTable: Sendable {
    /// Counts tables put in force (start-up is 1): for logs and tests.
    public let version: UInt64
    /// Every instance credentials may name, by name.
    public let settings: [String: ProviderSettings]
    /// The provider object of every instance that has endpoints, by name.
    public let providers: [String: any TokenProvider]

    public init(
        version: UInt64 = 1, settings: [String: ProviderSettings], providers: [String: any TokenProvider] = [:]
    ) {
        self.version = version
        self.settings = settings
        self.providers = providers
    }

    /// No instances: a vault nobody configured (tools, tests).
    public static let empty = ProviderTable(version: 0, settings: [:])

    /// The names credentials may use as `provider`: the configured instances and any provider
    /// object given without settings (tests).
    public var names: Set<String> { Set(settings.keys).union(providers.keys) }

    /// The instance's refresh planner; nil for a name without settings (the vault's default).
    public func planner(for provider: String) -> RefreshPlanner? { settings[provider]?.planner }

    /// How the instance's EBS `expired` values are read (seconds unless configured otherwise).
    public func expiredUnit(for provider: String) -> ExpiredUnit { settings[provider]?.expiredUnit ?? .seconds }
}
