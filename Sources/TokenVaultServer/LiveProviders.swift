import Synchronization
import TokenVaultCore

/// The provider instances a credential may name and how each reads EBS `expired` values: read by
/// every `PUT` and exchange, replaced whole by a reload (SIGHUP) that adds or removes instances.
public final class LiveProviders: Sendable {
    public struct Names: Sendable, Equatable {
        public var names: Set<String>
        public var expiredUnits: [String: ExpiredUnit]
    }

    private let current: Mutex<Names>

    public init(names: Set<String>, expiredUnits: [String: ExpiredUnit]) {
        current = Mutex(Names(names: names, expiredUnits: expiredUnits))
    }

    public var names: Set<String> { current.withLock { $0.names } }

    /// How `provider`'s EBS `expired` values are read (seconds unless configured otherwise).
    public func expiredUnit(_ provider: String) -> ExpiredUnit {
        current.withLock { $0.expiredUnits[provider] } ?? .seconds
    }

    /// Puts the instances of a reloaded configuration in force for the next request.
    public func replace(_ settings: [String: ProviderSettings]) {
        current.withLock { $0 = Names(names: Set(settings.keys), expiredUnits: settings.mapValues(\.expiredUnit)) }
    }
}
