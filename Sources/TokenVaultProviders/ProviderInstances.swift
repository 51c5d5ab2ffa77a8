import TokenVaultCore

/// How the daemon builds its provider tables: at start-up and at each reload through the same
/// code (`ProviderTable.rebuilt`), so an instance the reload did not change keeps its object
/// (its discovery cache, its transport) and one it re-pointed gets a new one. It keeps nothing
/// itself: the table in force is the engine's (`ProviderRouting.providerTable`).
public final class ProviderInstances: ProviderBuilding {
    private let environment: [String: String]
    private let transport: TransportMaker
    private let services: ProviderServices?
    private let ready: @Sendable () async -> ProviderConfigurationError?

    /// - Parameters:
    ///   - transport: how requests leave (the courier's transports in the daemon).
    ///   - services: id-token signature checks, and the keys of client assertions and of instances
    ///     marked `dpop` (the keyring's).
    ///   - ready: called once new instances are built, before they are handed out: the courier
    ///     learns them here. A problem it returns refuses the whole table, as a build error does.
    public init(
        environment: [String: String],
        transport: @escaping TransportMaker = { _, settings in DirectTransport(settings: settings) },
        services: ProviderServices? = nil,
        ready: @escaping @Sendable () async -> ProviderConfigurationError? = { nil }
    ) {
        self.environment = environment
        self.transport = transport
        self.services = services
        self.ready = ready
    }

    public func build(_ settings: [String: ProviderSettings], after previous: ProviderTable)
        async throws(ProviderConfigurationError) -> ProviderTable
    {
        let next = try await previous.rebuilt(
            settings, environment: environment, transport: transport, services: services)
        let fresh = next.providers.filter { name, provider in
            !(previous.providers[name]?.isSameObject(as: provider) ?? false)
        }
        if let problem = await ready() {
            await ProviderTable.shutdown(Array(fresh.values))
            throw problem
        }
        return next
    }

    public func release(_ providers: [any TokenProvider]) async { await ProviderTable.shutdown(providers) }
}
