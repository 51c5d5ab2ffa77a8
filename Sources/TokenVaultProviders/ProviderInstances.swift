import Synchronization
import TokenVaultCore

/// The daemon's provider instances over its life: built from the `providers` section at start-up
/// and again at each reload, through the same code (`ProviderSet.rebuilt`), so an instance the
/// reload did not change keeps its object (its discovery cache, its transport) and one it
/// re-pointed gets a new one.
public final class ProviderInstances: ProviderBuilding {
    private let environment: [String: String]
    private let transport: TransportMaker
    private let ready: @Sendable () async -> ProviderConfigurationError?
    private let current = Mutex(ProviderSet([:]))

    /// - Parameters:
    ///   - transport: how requests leave (the courier's transports in the daemon).
    ///   - ready: called once new instances are built, before they are handed out: the courier
    ///     learns them here. A problem it returns refuses the whole set, as a build error does.
    public init(
        environment: [String: String],
        transport: @escaping TransportMaker = { _, settings in DirectTransport(settings: settings) },
        ready: @escaping @Sendable () async -> ProviderConfigurationError? = { nil }
    ) {
        self.environment = environment
        self.transport = transport
        self.ready = ready
    }

    /// The instances last built.
    public var set: ProviderSet { current.withLock { $0 } }

    public func build(_ settings: [String: ProviderSettings]) async throws(ProviderCatalogError)
        -> [String: any TokenProvider]
    {
        let previous = set
        do throws(ProviderConfigurationError) {
            let next = try await previous.rebuilt(settings, environment: environment, transport: transport)
            let fresh = next.all.filter { name, provider in !(previous[name]?.isSameObject(as: provider) ?? false) }
            if let problem = await ready() {
                await ProviderSet.shutdown(Array(fresh.values))
                throw problem
            }
            current.withLock { $0 = next }
            return next.all
        } catch {
            throw ProviderCatalogError(key: error.key, problem: error.problem)
        }
    }

    public func release(_ providers: [any TokenProvider]) async { await ProviderSet.shutdown(providers) }
}
