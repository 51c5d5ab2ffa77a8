import TokenVaultCore

/// The daemon's provider instances by name, and the one place that shuts their HTTP clients
/// down.
public final class ProviderSet: Sendable {
    private let providers: [String: any TokenProvider]
    /// What each instance was built from (instances without endpoints included).
    let settings: [String: ProviderSettings]

    public init(_ providers: [String: any TokenProvider]) {
        self.providers = providers
        settings = [:]
    }

    init(_ providers: [String: any TokenProvider], settings: [String: ProviderSettings]) {
        self.providers = providers
        self.settings = settings
    }

    /// Builds every instance that has an endpoint. If one instance is misconfigured, those
    /// already built are shut down before the error is thrown.
    public static func make(
        _ settings: [ProviderSettings], environment: [String: String],
        transport: @escaping TransportMaker = { _, settings in DirectTransport(settings: settings) }
    ) async throws(ProviderConfigurationError) -> ProviderSet {
        try await ProviderSet([:]).rebuilt(
            Dictionary(settings.map { ($0.name, $0) }) { $1 }, environment: environment, transport: transport)
    }

    /// The set for `settings`, keeping this set's object of every instance whose provider would be
    /// built the same (`ProviderSettings.change(to:)` below `rebuilt`) and building the others. If one instance is
    /// misconfigured, those built here (not the kept ones) are shut down before the error is thrown.
    public func rebuilt(
        _ settings: [String: ProviderSettings], environment: [String: String],
        transport: @escaping TransportMaker = { _, settings in DirectTransport(settings: settings) }
    ) async throws(ProviderConfigurationError) -> ProviderSet {
        var next: [String: any TokenProvider] = [:]
        var built: [any TokenProvider] = []
        for name in settings.keys.sorted() {
            let instance = settings[name]!
            if let previous = self.settings[name], previous.change(to: instance) < .rebuilt {
                next[name] = providers[name]
                continue
            }
            do throws(ProviderConfigurationError) {
                if let provider = try ProviderFactory.make(instance, environment: environment, transport: transport) {
                    next[name] = provider
                    built.append(provider)
                }
            } catch {
                await Self.shutdown(built)
                throw error
            }
        }
        return ProviderSet(next, settings: settings)
    }

    public subscript(name: String) -> (any TokenProvider)? { providers[name] }

    /// Every instance that can refresh, by name (what the refresh engine is given).
    public var all: [String: any TokenProvider] { providers }

    /// Names of the instances that can refresh, sorted.
    public var names: [String] { providers.keys.sorted() }

    /// Shuts down every provider that holds resources, concurrently. Errors are dropped: this
    /// runs on the way out, and a client that fails to close cleanly has nothing left to do.
    public func shutdown() async { await Self.shutdown(Array(providers.values)) }

    /// Shuts down those of `providers` that hold resources, concurrently (errors dropped, as above).
    public static func shutdown(_ providers: [any TokenProvider]) async {
        await withTaskGroup(of: Void.self) { group in
            for provider in providers {
                guard let closable = provider as? any ShutdownableProvider else { continue }
                group.addTask { try? await closable.shutdown() }
            }
        }
    }
}
