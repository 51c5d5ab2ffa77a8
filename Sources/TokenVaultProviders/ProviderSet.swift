import TokenVaultCore

/// The daemon's provider instances by name, and the one place that shuts their HTTP clients
/// down.
public final class ProviderSet: Sendable {
    private let providers: [String: any TokenProvider]

    public init(_ providers: [String: any TokenProvider]) {
        self.providers = providers
    }

    /// Builds every instance that has an endpoint. If one instance is misconfigured, those
    /// already built are shut down before the error is thrown.
    public static func make(
        _ settings: [ProviderSettings], environment: [String: String],
        transport: TransportMaker = { _, settings in DirectTransport(settings: settings) }
    ) async throws(ProviderConfigurationError) -> ProviderSet {
        var built: [String: any TokenProvider] = [:]
        for instance in settings {
            do throws(ProviderConfigurationError) {
                if let provider = try ProviderFactory.make(instance, environment: environment, transport: transport) {
                    built[instance.name] = provider
                }
            } catch {
                await ProviderSet(built).shutdown()
                throw error
            }
        }
        return ProviderSet(built)
    }

    public subscript(name: String) -> (any TokenProvider)? { providers[name] }

    /// Every instance that can refresh, by name (what the refresh engine is given).
    public var all: [String: any TokenProvider] { providers }

    /// Names of the instances that can refresh, sorted.
    public var names: [String] { providers.keys.sorted() }

    /// Shuts down every provider that holds resources, concurrently. Errors are dropped: this
    /// runs on the way out, and a client that fails to close cleanly has nothing left to do.
    public func shutdown() async {
        await withTaskGroup(of: Void.self) { group in
            for provider in providers.values {
                guard let closable = provider as? any ShutdownableProvider else { continue }
                group.addTask { try? await closable.shutdown() }
            }
        }
    }
}
