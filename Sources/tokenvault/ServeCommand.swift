import ArgumentParser
import Foundation
import Logging
import NIOPosix
import ServiceLifecycle
import Synchronization
import TokenVaultCore
import TokenVaultCourier
import TokenVaultCrypto
import TokenVaultEngine
import TokenVaultProviders
import TokenVaultServer
import TokenVaultStorage
import TokenVaultSystem

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the daemon: the local HTTP/JSON API on a Unix socket.",
        discussion: """
            Stops on SIGTERM or SIGINT: no new connections, in-flight requests finish, audit rows \
            are flushed, the database is closed and the socket file removed.
            """)

    @OptionGroup var options: VaultOptions
    @Option(
        help: ArgumentHelp(
            "Socket path.",
            discussion:
                "Default: $TOKENVAULT_SOCKET, else the config's socket.path, else <data-dir>/run/tokenvault.sock",
            valueName: "path"))
    var socket: String?

    /// The daemon's wiring, in the order the parts depend on each other; each step is one of
    /// `ServeCommand+Parts.swift`.
    func run() async throws {
        let settings = try Self.settingsOrExit(options)
        let process = try Self.prepareProcess(options, settings)
        let logger = process.logger
        // Checked before anything is opened: a misconfigured provider instance stops start-up
        // naming its key. Requests go through the courier, started once the vault is open.
        let courier = Self.makeCourier(options, settings, logger: logger)
        // Client and DPoP keys come from the keyring, handed over once the vault is open.
        let services = ProviderServices(cryptography: JWSVerification())
        let instances = ProviderInstances(
            environment: options.environment, transport: courier.transportMaker, services: services,
            ready: { await Self.courierLearnsInstances(courier) })
        let table = try await Self.buildProviders(instances, settings, configPath: options.configPath)
        raiseOpenFileLimit()
        try await reportingErrorsAsync {
            let socketPath =
                process.activation?.path ?? socket ?? options.environment["TOKENVAULT_SOCKET"] ?? settings.socketPath
                ?? options.resolvedDataDir + "/run/tokenvault.sock"
            // The lock first: nothing is opened, migrated or keyed under another holder.
            let (lock, opened) = try Self.lockAndOpen(options, settings, socketPath: socketPath)
            // A socket systemd passed is the socket unit's: its mode, group and file are left alone.
            if process.activation == nil { try SocketGuard.prepare(path: socketPath) }
            // A courier of an earlier daemon finishes first, and the answers it spooled are read
            // before any call is sent or any attempt resumed (`CourierClient`, `RefreshScheduler`);
            // the API serves what is stored meanwhile. A courier that cannot start stops the daemon
            // (`CourierService`).
            // A courier that starts at once is waited for, so refreshes can begin as soon as the
            // API takes writes; one that must wait for an earlier daemon's courier is not.
            let earlierCourier = courier.earlierCourierHoldsTheSpool
            let courierStart = Task { try await courier.start(keyring: opened.keyring) }
            if !earlierCourier { _ = await courier.waitUntilReady() }
            services.use(
                opened.keyring,
                metadata: KeptProviderMetadataSettings(
                    store: opened.database,
                    tag: { [keyring = opened.keyring] in
                        try keyring.settingTag($0, label: "tokenvault.kept-metadata.v1")
                    },
                    logger: logger))
            let engine = try Self.makeEngine(opened, table, settings, options, courier: courier, logger: logger)
            await engine.measureClock()
            let changeListener = Self.listenForChanges(opened, engine)
            let audit = AuditRecorder(vault: opened.vault, options: .init(settings.audit), logger: logger)
            let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: settings.eventLoops)
            let upstream = UpstreamClients(dpop: services.dpop, eventLoopGroup: eventLoops)
            let webhooks = try await Self.startWebhooks(opened, settings, options, logger: logger)
            let api = Self.makeAPI(
                opened, engine, audit, settings, options, courier: courier, upstream: upstream,
                webhooks: webhooks.dispatcher)
            let status = Self.statusLine(opened, engine)
            let watchdog = WatchdogSlot()
            let application = Self.makeApplication(
                api, process, settings, socketPath: socketPath, eventLoops: eventLoops, status: status,
                watchdog: watchdog)
            let reload = ConfigurationReload(
                running: settings, load: { [options] in try Self.loadSettings(options) },
                file: options.configPath ?? "(defaults)", api: api, levels: process.levels,
                notifier: process.notifier, status: status, providers: .init(builder: instances, routing: engine),
                webhooks: { try await webhooks.prepare($0) }, logger: logger)
            // Shut down in reverse order: streams end, the API stops, in-flight refreshes commit,
            // audit rows are flushed, and last the courier exits (spooling anything unsettled).
            let group = ServiceGroup(
                configuration: .init(
                    services: [
                        .init(service: CourierService(courier: courier, starting: courierStart)),
                        .init(service: audit),
                        .init(service: webhooks.dispatcher),
                        .init(service: LeaseHeartbeat(engine: engine)),
                        .init(service: RefreshScheduler(engine: engine)),
                        .init(service: application), .init(service: StreamCloser(feed: opened.vault.events)),
                        .init(service: reload), .init(service: StoppingNotice(notifier: process.notifier)),
                    ],
                    gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            defer {
                watchdog.stop()
                if process.activation == nil { SocketGuard.remove(path: socketPath) }
                changeListener?.cancel()
                opened.database.close()
                withExtendedLifetime(lock) {}
            }
            // Whatever ended the group, what it leaves is closed before the error goes on.
            var failure: (any Error)?
            do { try await group.run() } catch { failure = error }
            watchdog.stop()
            // The proxy's clients live on the event loops: closed before them.
            await upstream.shutdown()
            await webhooks.shutdown()
            try? await eventLoops.shutdownGracefully()
            // Objects a reload replaced are shut down by their release; the ones in force here.
            await reload.releasesFinished()
            await instances.release(Array(engine.providerTable.providers.values))
            if let failure { throw failure }
            logger.info("stopped")
        }
    }
}

extension ServeCommand {
    /// The configuration file (or the defaults) with the environment's overrides: at start-up and
    /// on every reload.
    static func loadSettings(_ options: VaultOptions) throws -> DaemonConfiguration {
        var loaded = try options.loadConfiguration()
        try loaded.applyEnvironment(options.environment)
        return loaded
    }

    /// What health and metrics report of the database: its cache of rows and, on PostgreSQL, the
    /// change listener's state.
    static func storageStatus(of database: any VaultBackend) -> (@Sendable () -> StorageStatus)? {
        guard let shared = database as? PostgresDatabase else {
            return { StorageStatus(backend: "sqlite", rowCache: database.rowCacheStatistics) }
        }
        return {
            let listener = shared.listenerStatus
            return StorageStatus(
                backend: "postgres", changeFeedConnected: listener.connected, changeFeedReconnects: listener.reconnects,
                rowCache: shared.rowCacheStatistics, replication: shared.replication)
        }
    }
}

let tokenVaultVersion = "0.2.0"

extension ServeCommand {
    /// How long start-up waits for a courier of an earlier daemon to finish its calls: the longest
    /// any call may take, and ten seconds to spare.
    static func courierReadyTimeout(_ settings: DaemonConfiguration) -> Double {
        let longest = settings.providers.values.compactMap {
            try? ProviderFactory.transportSettings($0)?.callDeadlineSeconds
        }.max()
        return (longest ?? 0) + 10
    }
}

extension ServeCommand {
    /// Tells a running courier the instances built for a reload; one it cannot make a transport
    /// for refuses the set under that instance's key (its settings loaded here, so this is rare: a
    /// file changed in between), and so does a courier that does not answer (named by its pid).
    static func courierLearnsInstances(_ courier: CourierClient) async -> ProviderConfigurationError? {
        await courier.publishInstances().first
    }
}

/// Ends the daemon if the courier cannot start (a daemon without one would lose answers it
/// promised to keep), and stops the courier when the daemon stops (it is the group's first
/// service, so the last to stop: the refreshes in flight have committed and settled by then).
struct CourierService: Service {
    let courier: CourierClient
    let starting: Task<Void, any Error>

    func run() async throws {
        // Until the courier has started, or the daemon stops first (which ends a start that
        // waits for an earlier daemon's courier: `stop`).
        let started = await cancelWhenGracefulShutdown {
            await withTaskCancellationHandler {
                await starting.result
            } onCancel: {
                Task { await courier.stop() }
            }
        }
        if case .failure(let error) = started, !Task.isShuttingDownGracefully { throw error }
        try? await gracefulShutdown()
        await courier.stop()
    }
}

/// Tells the service manager the daemon is stopping (`STOPPING=1`) as soon as shutdown begins
/// (it is the group's last service, so the first to hear of it).
struct StoppingNotice: Service {
    let notifier: SystemdNotifier

    func run() async throws {
        try? await gracefulShutdown()
        notifier.send("STOPPING=1")
    }
}

/// Ends the watch and event streams when shutdown begins, so the HTTP server can finish its
/// in-flight requests (a stream is one that would otherwise never finish).
struct StreamCloser: Service {
    let feed: ChangeFeed

    func run() async throws {
        try? await gracefulShutdown()
        feed.close()
    }
}

/// Each connection is a file descriptor: lift the soft limit to the hard one so a burst of
/// clients is not refused for lack of descriptors.
private func raiseOpenFileLimit() {
    var limit = rlimit()
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else {
        return
    }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
}
