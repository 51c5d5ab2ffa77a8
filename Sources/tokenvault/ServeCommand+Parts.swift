import ArgumentParser
import Foundation
import Logging
import NIOPosix
import ServiceLifecycle
import Synchronization
import TokenVaultCore
import TokenVaultCourier
import TokenVaultEngine
import TokenVaultLedger
import TokenVaultProviders
import TokenVaultServer
import TokenVaultStorage
import TokenVaultSystem

/// The steps of `ServeCommand.run`, one part of the daemon each.
extension ServeCommand {
    /// What the process was set up with before anything is opened.
    struct Process {
        let levels: LogLevelSwitch
        let logger: Logger
        let notifier: SystemdNotifier
        let activation: SocketActivation?
    }

    /// The configuration, or exit 1 naming the file and key.
    static func settingsOrExit(_ options: VaultOptions) throws -> DaemonConfiguration {
        do {
            return try loadSettings(options)
        } catch let error as ConfigurationError {
            printError("error: \(error)")
            throw ExitCode(1)
        }
    }

    /// Signals, logging, systemd's notify socket and listening socket, core dumps, locked memory,
    /// the data directory's mode: everything before a secret is read.
    static func prepareProcess(_ options: VaultOptions, _ settings: DaemonConfiguration) throws -> Process {
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
        // Before the event loops and pools start their threads: few malloc arenas, so memory a
        // burst of streams freed is used again rather than kept per thread.
        if let problem = ProcessHygiene.limitMallocArenas(to: 2, environment: options.environment) {
            logger.warning("could not limit malloc arenas", metadata: ["tokenvault.error": "\(problem)"])
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
        return Process(levels: levels, logger: logger, notifier: notifier, activation: activation)
    }

    /// The courier, made now (provider instances are built with its transports) and started once
    /// the vault is open.
    static func makeCourier(_ options: VaultOptions, _ settings: DaemonConfiguration, logger: Logger) -> CourierClient {
        let spool = options.resolvedDataDir + "/spool"
        return CourierClient(
            spool: Spool(directory: spool),
            arguments: [
                "courier", "--spool", spool, "--log-format", settings.logFormat.rawValue,
                "--log-level", settings.logLevel.rawValue,
            ],
            readyTimeout: courierReadyTimeout(settings), logger: logger)
    }

    /// The first provider table (start-up and every reload build it the same way), or exit 1
    /// naming the key that does not work.
    static func buildProviders(_ instances: ProviderInstances, _ settings: DaemonConfiguration, configPath: String?)
        async throws -> ProviderTable
    {
        do {
            return try await instances.build(settings.providers, after: .empty)
        } catch {
            printError("error: config \(configPath ?? "(defaults)"): \(error.key): \(error.problem)")
            throw ExitCode(1)
        }
    }

    /// The webhook endpoints of the configuration, in force in the ledger and the dispatcher, or
    /// exit 1 naming the key that does not work.
    static func startWebhooks(
        _ opened: OpenedVault, _ settings: DaemonConfiguration, _ options: VaultOptions,
        logger: Logger
    ) async throws -> WebhookEndpoints {
        let node = try NodeIdentity.load(dataDirectory: options.resolvedDataDir)
        let dispatcher = WebhookDispatcher(
            outbox: opened.database, owner: node, logger: logger)
        let endpoints = WebhookEndpoints(dispatcher: dispatcher, vault: opened.vault)
        do {
            try await endpoints.prepare(settings.webhooks).install()
        } catch let error as ProviderConfigurationError {
            printError("error: config \(options.configPath ?? "(defaults)"): \(error.key): \(error.problem)")
            throw ExitCode(1)
        }
        return endpoints
    }

    /// The vault's lock (naming this daemon and its socket), then the vault itself.
    static func lockAndOpen(_ options: VaultOptions, _ settings: DaemonConfiguration, socketPath: String) throws
        -> (DatabaseLock, OpenedVault)
    {
        TokenVaultCommand.restrictFileCreation()
        try OpenedVault.requireVault(options)
        let lock = try DatabaseLock(databasePath: options.databasePath, socket: socketPath)
        let opened = try OpenedVault.open(
            options, commitRetryCap: min(30, Double(settings.leaseSeconds) / 6),
            maximumClockOffset: Double(settings.maximumClockOffsetSeconds))
        return (lock, opened)
    }

    /// The refresh engine; the provider table goes in force here, in the engine and the vault at
    /// once.
    static func makeEngine(
        _ opened: OpenedVault, _ table: ProviderTable, _ settings: DaemonConfiguration, _ options: VaultOptions,
        courier: CourierClient, logger: Logger
    ) throws -> RefreshEngine {
        var engineOptions = RefreshEngine.Options(leasePeriod: Double(settings.leaseSeconds))
        engineOptions.onDemandInterval = Double(settings.onDemandRefreshSeconds)
        engineOptions.signIn = SignInLimits(
            expirySeconds: Double(settings.signInExpirySeconds),
            maximumPendingPerUID: settings.signInMaximumPendingPerUID,
            maximumDeviceSeconds: Double(settings.signInDeviceMaximumSeconds),
            deviceClaimSeconds: Double(settings.signInDeviceClaimSeconds))
        // On SQLite this daemon is the only process that journals: nobody watches its heartbeat,
        // so while it holds nothing it beats once a lease period instead of every few seconds
        // (an idle daemon's wake-ups, docs/benchmarks.md).
        if opened.database is SQLiteDatabase {
            engineOptions.idleHeartbeatInterval = Double(settings.leaseSeconds)
        } else {
            // A failover to a standby that lagged: refreshes wait for its reconciliation, and
            // what it may lose is kept on this node's disk (docs/scale-out.md, "Failover").
            opened.vault.failover.arm()
            if settings.retainAnswersSeconds > 0 {
                let retained = RetainedAnswers(
                    directory: options.resolvedDataDir + "/retained",
                    retention: Double(settings.retainAnswersSeconds), clock: opened.vault.clock)
                opened.vault.retainAnswers(in: retained)
                // A restart on the timeline reconciled before holds nobody: the first beat says so.
                if let timeline = retained.reconciledTimeline { opened.vault.failover.reconciled(timeline) }
            }
        }
        engineOptions.node = try NodeIdentity.load(dataDirectory: options.resolvedDataDir)
        return RefreshEngine(
            vault: opened.vault, table: table, options: engineOptions, settlement: courier, logger: logger)
    }

    /// Several nodes on one PostgreSQL vault: what the others change wakes this node's scheduler,
    /// leaves its cache and reaches its watch and events streams, one change after the other in
    /// the order they committed (a sign-in's `authorized` after its tokens' `stored`). Nil on
    /// SQLite.
    static func listenForChanges(_ opened: OpenedVault, _ engine: RefreshEngine) -> Task<Void, Never>? {
        (opened.database as? PostgresDatabase).map { database in
            let (announced, announce) = AsyncStream.makeStream(of: PostgresDatabase.Change.self)
            database.onChange { change in
                guard !change.isOwn else { return }
                engine.wakeSchedulerSoon()
                if change.eventKind != nil { announce.yield(change) }
            }
            return Task { [vault = opened.vault] in
                async let published: Void = {
                    for await change in announced {
                        if let ended = change.signInEnd {
                            await vault.publishSignInEndedElsewhere(change.id, ended: ended)
                        } else if let kind = change.eventKind {
                            await vault.publishChangeMadeElsewhere(kind, change.id)
                        }
                    }
                }()
                await database.listenForChanges()
                announce.finish()
                await published
            }
        }
    }

    static func makeAPI(
        _ opened: OpenedVault, _ engine: RefreshEngine, _ audit: AuditRecorder, _ settings: DaemonConfiguration,
        _ options: VaultOptions, courier: CourierClient, upstream: UpstreamClients, webhooks: WebhookDispatcher
    ) -> VaultAPI {
        var apiOptions = VaultAPI.Options(
            maximumBodySize: settings.maximumBodySize, version: tokenVaultVersion,
            backupDirectory: options.resolvedDataDir + "/" + BackupFile.directoryName,
            groupRefreshSeconds: Double(settings.groupRefreshSeconds), tokenSizes: settings.tokenSizes,
            connections: settings.connections, courier: { courier.status },
            storage: storageStatus(of: opened.database))
        apiOptions.proxy = settings.proxy
        apiOptions.upstream = upstream
        apiOptions.webhooks = { webhooks.counters }
        return VaultAPI(
            vault: opened.vault, engine: engine, admin: opened.database,
            rotation: KeyRotation(vault: opened.vault, keyring: opened.keyring, terms: opened.database),
            policy: AccessPolicy(rules: settings.rules, daemonUID: getuid()), audit: audit, options: apiOptions)
    }

    /// The `STATUS=` line systemd shows.
    static func statusLine(_ opened: OpenedVault, _ engine: RefreshEngine) -> @Sendable () async -> String {
        { [database = opened.database] in
            let counts = try? await database.credentialCountsByStatus()
            let instances = engine.providerStates()
            let refreshing = instances.filter { $0.condition != .notConfigured }.count
            return "serving \(counts.map { String($0.values.reduce(0, +)) } ?? "?") credentials, "
                + "\(refreshing) of \(instances.count) provider instances refreshing"
        }
    }

    /// The HTTP server on the socket; once it listens: the socket's mode and group (unless systemd
    /// made it), `READY=1`, and the event loops' watchdog.
    static func makeApplication(
        _ api: VaultAPI, _ process: Process, _ settings: DaemonConfiguration, socketPath: String,
        eventLoops: MultiThreadedEventLoopGroup, status: @escaping @Sendable () async -> String,
        watchdog: WatchdogSlot
    ) -> some Service {
        let activation = process.activation
        let logger = process.logger
        let notifier = process.notifier
        return VaultServer.application(
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
            watchdog.start(notifier: notifier, group: eventLoops)
        }
    }
}

/// The event loops' watchdog: started once the daemon listens, stopped on the way out (before the
/// loops it runs on are gone).
final class WatchdogSlot: Sendable {
    private let running = Mutex<EventLoopWatchdog?>(nil)

    func start(notifier: SystemdNotifier, group: MultiThreadedEventLoopGroup) {
        running.withLock { $0 = EventLoopWatchdog.start(notifier: notifier, group: group) }
    }

    func stop() { running.withLock { $0?.stop() } }
}
