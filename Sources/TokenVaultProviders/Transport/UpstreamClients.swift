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
/// (`ca_file`, the client certificate of mutual TLS), read once per instance by the same code as
/// its token calls (`ProviderFactory.transportSettings`).
///
/// A call holds its client (`Use`) until its answer has streamed back. A client no call holds is
/// shut down once unused for `idleRetention`, or at once when a reload changed its instance's
/// transport or more than `maximumClients` are kept (the least recently used first). Redirects
/// are never followed: the caller gets the 3xx and may proxy again to the new location, which is
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

    /// One call's hold on a client: the client is not shut down while a use of it lasts. Ended
    /// once, by `end()` when the call's answer has streamed back or failed, or when nothing holds
    /// the use any more.
    public final class Use: Sendable {
        public let client: HTTPClient
        private let onEnd: @Sendable () -> Void
        private let ended = Mutex(false)

        init(client: HTTPClient, onEnd: @escaping @Sendable () -> Void) {
            self.client = client
            self.onEnd = onEnd
        }

        public func end() {
            let first = ended.withLock { done in
                defer { done = true }
                return !done
            }
            if first { onEnd() }
        }

        deinit { end() }
    }

    private struct Key: Hashable {
        let instance: String
        let owner: Owner
    }

    private struct Entry {
        let key: Key
        let client: HTTPClient
        /// The instance's transport the client was made with.
        let transport: TransportSettings
        var lastUsed: ContinuousClock.Instant
        var inFlight = 0
    }

    private struct State {
        /// The client each owner's calls through an instance use now.
        var current: [Key: ObjectIdentifier] = [:]
        /// Every client not shut down yet: the current ones and those a reload replaced.
        var entries: [ObjectIdentifier: Entry] = [:]
        /// Each instance's transport, read once per provider table (`ProviderTable.version`).
        var transports: [String: (version: UInt64, transport: TransportSettings)] = [:]
        var lastSweep = ContinuousClock.now
        /// Shutdowns under way, awaited by `shutdown()`.
        var closing: [ObjectIdentifier: Task<Void, Never>] = [:]
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
    /// How long a client no call holds is kept for the next call: as long as the HTTP client
    /// keeps an idle connection (60 s), after which the client holds nothing worth keeping.
    private let idleRetention: Duration
    /// Clients kept at most: past it, the least recently used idle one is shut down for a new one.
    /// Each holds at least a connection, and a host proxying for many credentials and callers
    /// would otherwise keep one per pair.
    private let maximumClients: Int

    public init(
        connectionsPerHost: Int = 64, dpop: DPoPSessions? = nil,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        idleRetention: Duration = .seconds(60), maximumClients: Int = 1024
    ) {
        self.connectionsPerHost = connectionsPerHost
        self.dpop = dpop
        self.eventLoopGroup = eventLoopGroup
        self.idleRetention = idleRetention
        self.maximumClients = maximumClients
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

    /// A use of the client for `owner`'s calls through the instance `settings` describes, as the
    /// provider table of `version` has it; end it when the call's answer has streamed back. After
    /// `shutdown`, an error: a call arriving while the daemon stops gets no client that nobody
    /// would shut down.
    public func use(for settings: ProviderSettings, version: UInt64, owner: Owner) throws(ProviderConfigurationError)
        -> Use
    {
        let key = Key(instance: settings.name, owner: owner)
        let now = ContinuousClock.now
        let transport = try transportSettings(settings, version: version)
        let kept = state.withLock { state -> (id: ObjectIdentifier, client: HTTPClient)? in
            sweep(&state, at: now)
            guard let id = state.current[key], let entry = state.entries[id], entry.transport == transport else {
                return nil
            }
            state.entries[id]?.inFlight += 1
            return (id, entry.client)
        }
        if let kept { return use(kept.client, kept.id) }

        let made = Self.makeClient(transport, connectionsPerHost: connectionsPerHost, on: eventLoopGroup)
        let id = ObjectIdentifier(made)
        let stopping = state.withLock { state -> Bool in
            if state.isShutDown { return true }
            // A reload changed the transport: the client it replaces goes once its calls end.
            if let replaced = state.current[key] { retire(replaced, in: &state) }
            state.current[key] = id
            state.entries[id] = Entry(key: key, client: made, transport: transport, lastUsed: now, inFlight: 1)
            evictOverCapacity(&state)
            return false
        }
        if stopping {
            // Never waited for here: the caller may be an event loop's task.
            Task { try? await made.shutdown() }
            throw Self.stopping(settings)
        }
        return use(made, id)
    }

    private func use(_ client: HTTPClient, _ id: ObjectIdentifier) -> Use {
        Use(client: client) { [self] in
            state.withLock { state in
                guard var entry = state.entries[id] else { return }
                entry.inFlight -= 1
                entry.lastUsed = .now
                state.entries[id] = entry
                // A replaced client whose last call ended has nothing more to carry.
                if entry.inFlight == 0, state.current[entry.key] != id { retire(id, in: &state) }
            }
        }
    }

    /// How many clients are kept now (the `tokenvault_proxy_upstream_clients` gauge).
    public var count: Int { state.withLock { $0.entries.count } }

    /// At most once a second (or per `idleRetention`, if shorter): the clients no call holds and
    /// none used for `idleRetention` are shut down.
    private func sweep(_ state: inout State, at now: ContinuousClock.Instant) {
        guard now - state.lastSweep >= min(.seconds(1), idleRetention) else { return }
        state.lastSweep = now
        let horizon = now - idleRetention
        for (id, entry) in state.entries where entry.inFlight == 0 && entry.lastUsed < horizon {
            retire(id, in: &state)
        }
    }

    /// The least recently used idle clients, while more than `maximumClients` are kept.
    private func evictOverCapacity(_ state: inout State) {
        guard state.entries.count > maximumClients else { return }
        let idle = state.entries.filter { $0.value.inFlight == 0 }.sorted { $0.value.lastUsed < $1.value.lastUsed }
        for (id, _) in idle.prefix(state.entries.count - maximumClients) { retire(id, in: &state) }
    }

    /// Forgets `id` and shuts its client down once no call holds it (now, when none does).
    private func retire(_ id: ObjectIdentifier, in state: inout State) {
        guard let entry = state.entries[id] else { return }
        if state.current[entry.key] == id { state.current[entry.key] = nil }
        guard entry.inFlight == 0 else { return }
        state.entries[id] = nil
        let client = entry.client
        // Inserted under the lock the task takes to remove itself, so it is never left behind.
        state.closing[id] = Task {
            try? await client.shutdown()
            _ = self.state.withLock { $0.closing.removeValue(forKey: id) }
        }
    }

    /// The instance's transport settings, as its token calls read them (or the defaults with this
    /// pool's size when it has no options): read once per provider table, since reading them may
    /// load a client certificate from disk; a reload reads them again (a certificate replaced in
    /// its file is used from then on). A call that took an older table before a reload gets the
    /// newer transport, never puts the older one back.
    private func transportSettings(_ settings: ProviderSettings, version: UInt64) throws(ProviderConfigurationError)
        -> TransportSettings
    {
        if let known = state.withLock({ $0.transports[settings.name] }), known.version >= version {
            return known.transport
        }
        let transport =
            try ProviderFactory.transportSettings(settings) ?? TransportSettings(maximumConnections: connectionsPerHost)
        return state.withLock { state in
            if let known = state.transports[settings.name], known.version >= version { return known.transport }
            state.transports[settings.name] = (version, transport)
            return transport
        }
    }

    /// A call arriving while the daemon stops gets no client that nobody would shut down.
    private static func stopping(_ settings: ProviderSettings) -> ProviderConfigurationError {
        ProviderConfigurationError(key: "providers.\(settings.name)", problem: "the daemon is stopping")
    }

    /// Shuts every client down, held or not (the daemon stops), and waits for them all.
    public func shutdown() async {
        let (clients, closing) = state.withLock { state -> ([HTTPClient], [Task<Void, Never>]) in
            defer {
                state.current = [:]
                state.entries = [:]
                state.isShutDown = true
            }
            return (state.entries.values.map(\.client), Array(state.closing.values))
        }
        for client in clients { try? await client.shutdown() }
        for task in closing { await task.value }
    }

    private static func makeClient(
        _ settings: TransportSettings, connectionsPerHost: Int, on group: any EventLoopGroup
    ) -> HTTPClient {
        var configuration = settings.clientConfiguration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connectionsPerHost
        return HTTPClient(eventLoopGroup: group, configuration: configuration)
    }
}
