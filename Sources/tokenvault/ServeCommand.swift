import ArgumentParser
import Foundation
import Logging
import NIOPosix
import ServiceLifecycle
import Synchronization
import TokenVaultCore
import TokenVaultCourier
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

    func run() async throws {
        let settings: DaemonConfiguration
        let configPath = options.configPath
        do {
            settings = try Self.loadSettings(options)
        } catch let error as ConfigurationError {
            printError("error: \(error)")
            throw ExitCode(1)
        }
        // On PostgreSQL every statement waits on a blocking thread: one per connection.
        if let url = try? options.resolvedStorageURL(),
            let storage = try? PostgresDatabase.Configuration(url: url, password: nil)
        {
            BlockingWork.reserve(waitingThreads: PostgresDatabase.blockingThreads(for: storage))
        }
        // SIGHUP reloads once the daemon serves; until then it must not end the process (its
        // default action), so it is ignored from the start.
        signal(SIGHUP, SIG_IGN)
        let levels = LogLevelSwitch(settings.logLevel)
        let journal = DaemonLogHandler.stderrIsJournal(options.environment)
        LoggingSystem.bootstrap { label in
            DaemonLogHandler(label: label, format: settings.logFormat, journal: journal, levels: levels)
        }
        let logger = Logger(label: "tokenvault")
        // Taken before the courier is spawned, so that it inherits neither.
        let notifier = SystemdNotifier.take(from: options.environment)
        let activation: SocketActivation?
        do {
            activation = try SocketActivation.take(from: options.environment)
        } catch {
            printError("error: \(error)")
            throw ExitCode(1)
        }
        // Before any secret is read: no core file, and no other process of this user attaching.
        if settings.coreDumps {
            logger.warning("core dumps are allowed (server.core_dumps): a crash may write tokens to disk")
        } else {
            for problem in ProcessHygiene.disableCoreDumps() {
                logger.warning("could not disable core dumps", metadata: ["tokenvault.error": "\(problem)"])
            }
        }
        if !SecretBytes.isMemoryLocked {
            logger.warning(
                "secrets memory could not be locked (mlock): tokens may be written to swap; raise RLIMIT_MEMLOCK (LimitMEMLOCK= in the unit)"
            )
        }
        do {
            try PrivateFile.checkDirectory(options.resolvedDataDir, what: "data directory")
        } catch {
            printError("error: \(error.message)")
            throw ExitCode(1)
        }
        // Endpoints, client secrets and TLS of each provider instance, checked before anything
        // is opened: a misconfigured instance stops start-up naming the key. Their requests go
        // through the courier, started once the vault is open.
        let courier = CourierClient(
            spool: Spool(directory: options.resolvedDataDir + "/spool"),
            arguments: [
                "courier", "--spool", options.resolvedDataDir + "/spool", "--log-format", settings.logFormat.rawValue,
                "--log-level", settings.logLevel.rawValue,
            ],
            readyTimeout: Self.courierReadyTimeout(settings), logger: logger)
        // Start-up and every reload build instances here, the same way.
        let instances = ProviderInstances(
            environment: options.environment, transport: courier.transportMaker,
            ready: { await Self.courierLearnsInstances(courier) })
        let table: ProviderTable
        do {
            table = try await instances.build(settings.providers, after: .empty)
        } catch {
            printError("error: config \(configPath ?? "(defaults)"): \(error.key): \(error.problem)")
            throw ExitCode(1)
        }
        raiseOpenFileLimit()
        try await reportingErrorsAsync {
            let socketPath =
                activation?.path ?? socket ?? options.environment["TOKENVAULT_SOCKET"] ?? settings.socketPath
                ?? options.resolvedDataDir + "/run/tokenvault.sock"
            // The lock first: nothing is opened, migrated or keyed under another holder.
            TokenVaultCommand.restrictFileCreation()
            try OpenedVault.requireVault(options)
            let lock = try DatabaseLock(databasePath: options.databasePath, socket: socketPath)
            let opened = try OpenedVault.open(
                options, executor: BlockingWork(), commitRetryCap: min(30, Double(settings.leaseSeconds) / 6))
            // A socket systemd passed is the socket unit's: its mode, group and file are left alone.
            if activation == nil { try SocketGuard.prepare(path: socketPath) }
            // Before the engine: a courier of an earlier daemon finishes first, and the answers it
            // spooled are read before any attempt is resumed.
            try await courier.start(keyring: opened.keyring)

            let audit = AuditRecorder(vault: opened.vault, options: .init(settings.audit), logger: logger)
            var engineOptions = RefreshEngine.Options(leasePeriod: Double(settings.leaseSeconds))
            engineOptions.onDemandInterval = Double(settings.onDemandRefreshSeconds)
            engineOptions.node = try NodeIdentity.load(dataDirectory: options.resolvedDataDir)
            // The provider table goes in force here, in the engine and the vault at once.
            let engine = RefreshEngine(
                vault: opened.vault, table: table, options: engineOptions, settlement: courier, logger: logger)
            // Several nodes on one PostgreSQL vault: what the others change wakes this node's
            // scheduler, leaves its cache and reaches its watch and events streams.
            let changeListener = (opened.database as? PostgresDatabase).map { database in
                database.onChange { [vault = opened.vault] change in
                    guard !change.isOwn else { return }
                    engine.wakeSchedulerSoon()
                    if let kind = change.eventKind {
                        Task { await vault.publishChangeMadeElsewhere(kind, change.id) }
                    }
                }
                return Task { await database.listenForChanges() }
            }
            let api = VaultAPI(
                vault: opened.vault, engine: engine, admin: opened.database,
                rotation: KeyRotation(vault: opened.vault, keyring: opened.keyring, terms: opened.database),
                policy: AccessPolicy(rules: settings.rules, daemonUID: getuid()), audit: audit,
                options: .init(
                    maximumBodySize: settings.maximumBodySize, version: tokenVaultVersion,
                    backupDirectory: options.resolvedDataDir + "/" + BackupFile.directoryName,
                    groupRefreshSeconds: Double(settings.groupRefreshSeconds), tokenSizes: settings.tokenSizes,
                    connections: settings.connections, courier: { courier.status },
                    storage: Self.storageStatus(of: opened.database)))
            let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: settings.eventLoops)
            // Off the concurrency pool: on PostgreSQL the count may wait for a connection.
            let status: @Sendable () async -> String = { [vault = opened.vault, database = opened.database] in
                let counts = try? await vault.blocking { try database.credentialCountsByStatus() }
                let instances = engine.providerStates()
                let refreshing = instances.filter { $0.condition != .notConfigured }.count
                return "serving \(counts.map { String($0.values.reduce(0, +)) } ?? "?") credentials, "
                    + "\(refreshing) of \(instances.count) provider instances refreshing"
            }
            let watchdog = Mutex<EventLoopWatchdog?>(nil)
            let application = VaultServer.application(
                api: api, listener: activation.map { .inherited(descriptor: $0.descriptor) } ?? .path(socketPath),
                idleTimeoutSeconds: settings.idleTimeoutSeconds, eventLoopGroup: eventLoops, logger: logger
            ) {
                do {
                    if activation == nil {
                        try SocketGuard.applyPermissions(
                            path: socketPath, mode: settings.socketMode, group: settings.socketGroup)
                    }
                    FileHandle.standardOutput.write(Data("tokenvault: listening on \(socketPath)\n".utf8))
                } catch {
                    logger.critical("cannot set socket permissions", metadata: ["error": "\(error)"])
                    SocketGuard.remove(path: socketPath)
                    Foundation.exit(1)
                }
                notifier.send("READY=1\nSTATUS=\(await status())")
                watchdog.withLock { $0 = EventLoopWatchdog.start(notifier: notifier, group: eventLoops) }
            }
            let reload = ConfigurationReload(
                running: settings, load: { [options] in try Self.loadSettings(options) },
                file: configPath ?? "(defaults)", api: api, levels: levels, notifier: notifier, status: status,
                providers: .init(builder: instances, routing: engine), logger: logger)
            // Shut down in reverse order: streams end, the API stops, in-flight refreshes commit,
            // audit rows are flushed, and last the courier exits (spooling anything unsettled).
            let group = ServiceGroup(
                configuration: .init(
                    services: [
                        .init(service: CourierService(courier: courier)), .init(service: audit),
                        .init(service: LeaseHeartbeat(engine: engine)),
                        .init(service: RefreshScheduler(engine: engine)),
                        .init(service: application), .init(service: StreamCloser(feed: opened.vault.events)),
                        .init(service: reload), .init(service: StoppingNotice(notifier: notifier)),
                    ],
                    gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            defer {
                watchdog.withLock { $0?.stop() }
                if activation == nil { SocketGuard.remove(path: socketPath) }
                changeListener?.cancel()
                opened.database.close()
                withExtendedLifetime(lock) {}
            }
            try await group.run()
            // Before the loops it runs on are gone.
            watchdog.withLock { $0?.stop() }
            try? await eventLoops.shutdownGracefully()
            // Objects a reload replaced are shut down by their release; the ones in force here.
            await reload.releasesFinished()
            await instances.release(Array(engine.providerTable.providers.values))
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

    /// What health reports of the database: on PostgreSQL, the change listener's state.
    static func storageStatus(of database: any VaultBackend) -> (@Sendable () -> StorageStatus)? {
        guard let database = database as? PostgresDatabase else { return nil }
        return {
            let listener = database.listenerStatus
            return StorageStatus(
                backend: "postgres", changeFeedConnected: listener.connected, changeFeedReconnects: listener.reconnects)
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

/// Stops the courier when the daemon stops (it is the group's first service, so the last to stop:
/// the refreshes in flight have committed and settled by then).
struct CourierService: Service {
    let courier: CourierClient

    func run() async throws {
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
