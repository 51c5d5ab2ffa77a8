import AsyncHTTPClient
import NIOCore
import NIOPosix
import Synchronization
import TokenVaultCore

/// The HTTP clients the proxy sends credentials' API calls with: one per provider instance, so
/// each has its own pool of kept-alive connections and the instance's TLS settings (`ca_file`,
/// the client certificate of mutual TLS), read by the same code as its token calls
/// (`ProviderFactory.transportSettings`). Made on first use; a reload that changes the instance
/// gets a new client, and the old one is shut down with the others at the end (calls may still
/// be streaming through it). Redirects are never followed: the caller gets the 3xx and may
/// proxy again to the new location, which is checked against the list like any other.
public final class UpstreamClients: Sendable {
    private struct Entry {
        let settings: ProviderSettings
        let client: HTTPClient
    }

    private struct State {
        var clients: [String: Entry] = [:]
        var transports: [String: (settings: ProviderSettings, transport: UpstreamTransport)] = [:]
        var retired: [HTTPClient] = []
        var isShutDown = false
    }

    private let state = Mutex(State())
    /// Connections kept per upstream host.
    private let connectionsPerHost: Int
    /// The DPoP keys and nonces of instances marked `dpop`, shared with their token calls.
    private let dpop: DPoPSessions?
    /// Where the clients' connections live: the daemon's own event loops, so a proxied call's
    /// upstream I/O does not wake a second group's threads (shut the clients down first).
    private let eventLoopGroup: any EventLoopGroup

    public init(
        connectionsPerHost: Int = 64, dpop: DPoPSessions? = nil,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.connectionsPerHost = connectionsPerHost
        self.dpop = dpop
        self.eventLoopGroup = eventLoopGroup
    }

    /// The DPoP session proxied calls through `settings`' instance sign with; nil when the instance
    /// is not marked `dpop`.
    public func dpopSession(for settings: ProviderSettings) throws -> DPoPSession? {
        guard settings.dpop else { return nil }
        guard let dpop else {
            throw ProviderConfigurationError(
                key: "providers.\(settings.name).dpop", problem: "this daemon holds no DPoP keys")
        }
        return try dpop.session(for: settings.name)
    }

    /// The client for the instance `settings` describes (after `shutdown`, an error: a call
    /// arriving while the daemon stops gets no client that nobody would shut down).
    public func client(for settings: ProviderSettings) throws(ProviderConfigurationError) -> HTTPClient {
        guard !state.withLock({ $0.isShutDown }) else { throw Self.stopping(settings) }
        if let entry = state.withLock({ $0.clients[settings.name] }), entry.settings == settings { return entry.client }
        let made = Self.makeClient(
            try transportSettings(settings), connectionsPerHost: connectionsPerHost, on: eventLoopGroup)
        let (client, unused) = state.withLock { state -> (HTTPClient?, HTTPClient?) in
            if state.isShutDown { return (nil, made) }
            if let entry = state.clients[settings.name], entry.settings == settings { return (entry.client, made) }
            if let old = state.clients[settings.name] { state.retired.append(old.client) }
            state.clients[settings.name] = Entry(settings: settings, client: made)
            return (made, nil)
        }
        if let unused { unused.shutdown { _ in } }
        guard let client else { throw Self.stopping(settings) }
        return client
    }

    /// The instance's transport settings, as its token calls read them, or the defaults with
    /// this pool's size when it has no options.
    private func transportSettings(_ settings: ProviderSettings) throws(ProviderConfigurationError)
        -> TransportSettings
    {
        try ProviderFactory.transportSettings(settings) ?? TransportSettings(maximumConnections: connectionsPerHost)
    }

    /// A call arriving while the daemon stops gets no client or transport that nobody would shut down.
    private static func stopping(_ settings: ProviderSettings) -> ProviderConfigurationError {
        ProviderConfigurationError(key: "providers.\(settings.name)", problem: "the daemon is stopping")
    }

    /// The TLS context and timeouts the daemon's own proxy connections use for the instance
    /// `settings` describes, made on first use (loading the trust roots once) and kept until its
    /// settings change.
    public func transport(for settings: ProviderSettings) throws(ProviderConfigurationError) -> UpstreamTransport {
        let kept = state.withLock { state -> (stopping: Bool, UpstreamTransport?) in
            guard !state.isShutDown else { return (true, nil) }
            guard let entry = state.transports[settings.name], entry.settings == settings else { return (false, nil) }
            return (false, entry.transport)
        }
        guard !kept.stopping else { throw Self.stopping(settings) }
        if let transport = kept.1 { return transport }
        let made: UpstreamTransport
        do {
            made = try UpstreamTransport(try transportSettings(settings))
        } catch {
            throw ProviderConfigurationError(
                key: "providers.\(settings.name)", problem: "its TLS settings cannot be used: \(type(of: error))")
        }
        return state.withLock { state in
            if let entry = state.transports[settings.name], entry.settings == settings { return entry.transport }
            state.transports[settings.name] = (settings, made)
            return made
        }
    }

    public func shutdown() async {
        let clients = state.withLock { state -> [HTTPClient] in
            defer {
                state.clients = [:]
                state.transports = [:]
                state.retired = []
                state.isShutDown = true
            }
            return state.clients.values.map(\.client) + state.retired
        }
        for client in clients { try? await client.shutdown() }
    }

    private static func makeClient(
        _ settings: TransportSettings, connectionsPerHost: Int, on group: any EventLoopGroup
    ) -> HTTPClient {
        var configuration = settings.clientConfiguration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connectionsPerHost
        return HTTPClient(eventLoopGroup: group, configuration: configuration)
    }
}
