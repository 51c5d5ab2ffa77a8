import TokenVaultCore

/// Building provider tables from the `providers` section, and the one place that shuts their
/// HTTP clients down.
extension ProviderTable {
    /// The table for `settings`, built from nothing (tools, tests). If one instance is
    /// misconfigured, those already built are shut down before the error is thrown.
    public static func make(
        _ settings: [ProviderSettings], environment: [String: String],
        transport: @escaping TransportMaker = { _, settings in DirectTransport(settings: settings) },
        services: ProviderServices? = nil
    ) async throws(ProviderConfigurationError) -> ProviderTable {
        try await ProviderTable.empty.rebuilt(
            Dictionary(settings.map { ($0.name, $0) }) { $1 }, environment: environment, transport: transport,
            services: services)
    }

    /// The next table, for `settings`: this table's object of every instance whose provider would
    /// be built the same (`ProviderSettings.change(to:)` below `rebuilt`), new objects for the
    /// others. If one instance is misconfigured, those built here (not the kept ones) are shut
    /// down before the error is thrown.
    public func rebuilt(
        _ settings: [String: ProviderSettings], environment: [String: String],
        transport: @escaping TransportMaker = { _, settings in DirectTransport(settings: settings) },
        services: ProviderServices? = nil
    ) async throws(ProviderConfigurationError) -> ProviderTable {
        var next: [String: any TokenProvider] = [:]
        var built: [any TokenProvider] = []
        for name in settings.keys.sorted() {
            let instance = settings[name]!
            if let previous = self.settings[name], previous.change(to: instance) < .rebuilt {
                next[name] = providers[name]
                continue
            }
            do throws(ProviderConfigurationError) {
                if let provider = try ProviderFactory.make(
                    instance, environment: environment, transport: transport, services: services)
                {
                    next[name] = provider
                    built.append(provider)
                }
            } catch {
                await Self.shutdown(built)
                throw error
            }
        }
        return ProviderTable(version: version + 1, settings: settings, providers: next)
    }

    /// Shuts down those of `providers` that hold resources, concurrently. Errors are dropped: this
    /// runs on the way out, and a client that fails to close cleanly has nothing left to do.
    public static func shutdown(_ providers: [any TokenProvider]) async {
        await withTaskGroup(of: Void.self) { group in
            for provider in providers {
                guard let closable = provider as? any ShutdownableProvider else { continue }
                group.addTask { try? await closable.shutdown() }
            }
        }
    }
}
