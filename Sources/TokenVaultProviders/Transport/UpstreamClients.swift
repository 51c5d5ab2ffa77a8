import AsyncHTTPClient
import NIOCore
import NIOPosix
import Synchronization
import TokenVaultCore

/// The HTTP clients the proxy sends credentials' API calls with: one per provider instance,
/// credential and caller, so a kept-alive connection only ever carries one caller's calls with
/// one credential's token. An upstream (or a gateway in front of it) that answers without
/// reading a request's body reads that body as the start of the next request on the
/// connection; were connections shared, another caller's call would complete it, its token
/// riding on a request the first caller wrote. Each client has the instance's TLS settings
/// (`ca_file`, the client certificate of mutual TLS), read by the same code as its token calls
/// (`ProviderFactory.transportSettings`).
///
/// A client is made on first use and shut down once unused for `retention`: longer than a call
/// may last (so none is in flight) plus the time its connections are kept idle. A reload that
/// changes the instance gets new clients; the old ones are shut down the same way. Redirects are
/// never followed: the caller gets the 3xx and may proxy again to the new location, which is
/// checked against the list like any other.
public final class UpstreamClients: Sendable {
    /// Whose calls a client carries.
    public struct Owner: Hashable, Sendable {
        public var credential: CredentialID
        /// The caller's uid: the identity the daemon's policy judges.
        public var uid: UInt32

        public init(credential: CredentialID, uid: UInt32) {
            self.credential = credential
            self.uid = uid
        }
    }

    private struct Key: Hashable {
        let instance: String
        let owner: Owner
    }

    private struct Entry {
        let settings: ProviderSettings
        let client: HTTPClient
        var lastUsed: ContinuousClock.Instant
    }

    private struct State {
        var clients: [Key: Entry] = [:]
        /// Clients replaced by a reload, with when they were last used.
        var retired: [(client: HTTPClient, lastUsed: ContinuousClock.Instant)] = []
        var lastSweep = ContinuousClock.now
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
    /// How long an unused client is kept: the longest call (`proxy.deadline_seconds`) plus the
    /// idle time of its kept connections (AsyncHTTPClient's 60 s).
    private let retention: Duration

    public init(
        connectionsPerHost: Int = 64, dpop: DPoPSessions? = nil,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        longestCall: Duration = .seconds(120)
    ) {
        self.connectionsPerHost = connectionsPerHost
        self.dpop = dpop
        self.eventLoopGroup = eventLoopGroup
        self.retention = longestCall + .seconds(60)
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

    /// The client for `owner`'s calls through the instance `settings` describes (after
    /// `shutdown`, an error: a call arriving while the daemon stops gets no client that nobody
    /// would shut down).
    public func client(for settings: ProviderSettings, owner: Owner) throws(ProviderConfigurationError) -> HTTPClient {
        let key = Key(instance: settings.name, owner: owner)
        let now = ContinuousClock.now
        if let kept = try used(key, settings, at: now) { return kept }
        let made = Self.makeClient(
            try transportSettings(settings), connectionsPerHost: connectionsPerHost, on: eventLoopGroup)
        let (client, unused) = state.withLock { state -> (HTTPClient?, HTTPClient?) in
            if state.isShutDown { return (nil, made) }
            if let entry = state.clients[key], entry.settings == settings {
                state.clients[key]?.lastUsed = now
                return (entry.client, made)
            }
            if let old = state.clients[key] { state.retired.append((old.client, old.lastUsed)) }
            state.clients[key] = Entry(settings: settings, client: made, lastUsed: now)
            return (made, nil)
        }
        if let unused { unused.shutdown { _ in } }
        guard let client else { throw Self.stopping(settings) }
        return client
    }

    /// The kept client for `key` if its settings are still `settings`, marked used; first, at
    /// most once per second, the clients unused for `retention` are let go.
    private func used(_ key: Key, _ settings: ProviderSettings, at now: ContinuousClock.Instant)
        throws(ProviderConfigurationError) -> HTTPClient?
    {
        let (kept, stopping, expired) = state.withLock { state -> (HTTPClient?, Bool, [HTTPClient]) in
            guard !state.isShutDown else { return (nil, true, []) }
            var expired: [HTTPClient] = []
            if now - state.lastSweep >= .seconds(1) {
                state.lastSweep = now
                let horizon = now - retention
                for (key, entry) in state.clients where entry.lastUsed < horizon {
                    state.clients[key] = nil
                    expired.append(entry.client)
                }
                expired += state.retired.filter { $0.lastUsed < horizon }.map(\.client)
                state.retired.removeAll { $0.lastUsed < horizon }
            }
            guard let entry = state.clients[key], entry.settings == settings else { return (nil, false, expired) }
            state.clients[key]?.lastUsed = now
            return (entry.client, false, expired)
        }
        for client in expired { client.shutdown { _ in } }
        if stopping { throw Self.stopping(settings) }
        return kept
    }

    /// How many clients are kept now (for tests and the metrics of a busy proxy).
    public var count: Int { state.withLock { $0.clients.count } }

    /// The instance's transport settings, as its token calls read them, or the defaults with
    /// this pool's size when it has no options.
    private func transportSettings(_ settings: ProviderSettings) throws(ProviderConfigurationError)
        -> TransportSettings
    {
        try ProviderFactory.transportSettings(settings) ?? TransportSettings(maximumConnections: connectionsPerHost)
    }

    /// A call arriving while the daemon stops gets no client that nobody would shut down.
    private static func stopping(_ settings: ProviderSettings) -> ProviderConfigurationError {
        ProviderConfigurationError(key: "providers.\(settings.name)", problem: "the daemon is stopping")
    }

    public func shutdown() async {
        let clients = state.withLock { state -> [HTTPClient] in
            defer {
                state.clients = [:]
                state.retired = []
                state.isShutDown = true
            }
            return state.clients.values.map(\.client) + state.retired.map(\.client)
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
