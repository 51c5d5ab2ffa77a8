import Logging
import ServiceLifecycle
import Synchronization
import TokenVaultCore
import TokenVaultSystem
import UnixSignals

/// Re-reads the configuration file on SIGHUP (`systemctl reload tokenvault`) and puts in force
/// what can change without a restart: the access rules, the log level and the provider instances
/// (added, removed, re-pointed to new endpoints, secrets or TLS files, or given new limits,
/// planners or `expired_unit`). Connections and streams stay open; the next request is judged by
/// the new rules, the next provider call goes to the new instance with its limits, and calls in
/// flight finish on the instance they started with, which is released afterwards. The
/// `webhooks` section too: the next change announces to the new endpoints.
///
/// A file that does not parse or validate, or names a provider instance that cannot be built (a
/// secret file that does not open, a bad URL, a TLS file), is refused as a whole: the error is
/// logged with the file and key, and the running configuration stays. Settings that only a
/// restart applies (socket, storage, `limits.*`, `server.*`, `audit.*`, `log.format`) are
/// compared, and each one that differs is logged as waiting for a restart.
public final class ConfigurationReload: Service, Sendable {
    public struct Outcome: Sendable, Equatable {
        /// Nil when the new file was put in force.
        public var refusal: String?
        /// Top-level sections that changed on disk but wait for a restart.
        public var needsRestart: [String]
    }

    /// Who builds provider instances (the same code as at start-up) and who calls them (the
    /// refresh engine).
    public struct Providers: Sendable {
        let builder: any ProviderBuilding
        let routing: any ProviderRouting

        public init(builder: any ProviderBuilding, routing: any ProviderRouting) {
            self.builder = builder
            self.routing = routing
        }
    }

    private let load: @Sendable () throws -> DaemonConfiguration
    private let file: String
    private let api: VaultAPI
    private let levels: LogLevelSwitch
    private let notifier: SystemdNotifier
    private let status: @Sendable () async -> String
    private let providers: Providers?
    /// A `webhooks` section's senders, built (secret files read, URLs checked) but not in force.
    public struct PreparedWebhooks: Sendable {
        /// Puts them in force with the section's routes.
        public let install: @Sendable () -> Void
        /// Shuts them down unused (the reload was refused for another section).
        public let discard: @Sendable () async -> Void

        public init(install: @escaping @Sendable () -> Void, discard: @escaping @Sendable () async -> Void) {
            self.install = install
            self.discard = discard
        }
    }

    /// Builds a `webhooks` section; an error names the key (`ProviderConfigurationError`).
    public typealias WebhookInstaller = @Sendable (WebhookSettings) async throws -> PreparedWebhooks
    private let webhooks: WebhookInstaller?
    private let logger: Logger
    private let running: Mutex<DaemonConfiguration>
    /// Releases of replaced provider objects still waiting for their calls, so that the daemon's
    /// shutdown can wait for them (`releasesFinished()`) instead of leaving them behind.
    private let releases = Mutex<[UInt64: Task<Void, Never>]>([:])
    private let nextRelease = Mutex<UInt64>(0)

    /// `load` reads the file (`file`, for messages) and applies the environment, as start-up did;
    /// `status` is the `STATUS=` line sent with `READY=1` when the reload is done; without
    /// `providers`, changed provider instances wait for a restart.
    public init(
        running: DaemonConfiguration, load: @escaping @Sendable () throws -> DaemonConfiguration,
        file: String = "(defaults)", api: VaultAPI, levels: LogLevelSwitch, notifier: SystemdNotifier,
        status: @escaping @Sendable () async -> String, providers: Providers? = nil,
        webhooks: WebhookInstaller? = nil, logger: Logger
    ) {
        self.webhooks = webhooks
        self.running = Mutex(running)
        self.load = load
        self.file = file
        self.api = api
        self.levels = levels
        self.notifier = notifier
        self.status = status
        self.providers = providers
        self.logger = logger
    }

    public func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            await reload()
        }
    }

    /// Reloads, between `RELOADING=1` and `READY=1`.
    @discardableResult
    public func reload() async -> Outcome {
        notifier.reloading()
        let outcome = await apply()
        notifier.send("READY=1\nSTATUS=\(await status())")
        return outcome
    }

    private func apply() async -> Outcome {
        let fresh: DaemonConfiguration
        do {
            fresh = try load()
        } catch {
            return refuse((error as? ConfigurationError)?.description ?? "\(error)")
        }
        let previous = running.withLock { $0 }
        // Webhooks first, then providers: an endpoint or instance that cannot be built refuses
        // the file before anything of it is in force (endpoints are built and checked before
        // they are installed, so a refused file leaves the running ones as they were).
        var preparedWebhooks: PreparedWebhooks?
        if let webhooks, fresh.webhooks != previous.webhooks {
            do {
                preparedWebhooks = try await webhooks(fresh.webhooks)
            } catch let error as ProviderConfigurationError {
                return refuse(ConfigurationError(file: file, key: error.key, problem: error.problem).description)
            } catch {
                return refuse("\(error)")
            }
        }
        var replacement: ProviderReplacement?
        if let providers, fresh.providers != previous.providers {
            let built: ProviderTable
            do throws(ProviderConfigurationError) {
                built = try await providers.builder.build(fresh.providers, after: providers.routing.providerTable)
            } catch {
                await preparedWebhooks?.discard()
                return refuse(ConfigurationError(file: file, key: error.key, problem: error.problem).description)
            }
            // One table, put in force whole: the engine's slots and what requests read.
            let replaced = providers.routing.install(built)
            // The replaced objects are released once the calls that started on them have ended.
            release(replaced, through: providers.builder)
            replacement = replaced
        }
        preparedWebhooks?.install()
        api.livePolicy.replace(rules: fresh.rules)
        levels.level = fresh.logLevel
        // What a restart would apply stays as it runs, so that it is reported again next time.
        var applied = previous
        applied.rules = fresh.rules
        applied.logLevel = fresh.logLevel
        if providers != nil { applied.providers = fresh.providers }
        if webhooks != nil { applied.webhooks = fresh.webhooks }
        let waiting = Self.sectionsNeedingRestart(applied, fresh)
        running.withLock { $0 = applied }
        for section in waiting {
            logger.warning(
                "configuration changed where only a restart applies it", metadata: ["tokenvault.key": "\(section)"])
        }
        var metadata: Logger.Metadata = [
            "tokenvault.access.rules": "\(fresh.rules.count)", "tokenvault.log.level": "\(fresh.logLevel)",
        ]
        if let replacement {
            for (key, names) in [
                ("added", replacement.added), ("removed", replacement.removed),
                ("repointed", replacement.repointed), ("limits_changed", replacement.retuned),
            ] where !names.isEmpty {
                metadata["tokenvault.provider.\(key)"] = "\(names.joined(separator: ","))"
            }
        }
        logger.notice("configuration reloaded", metadata: metadata)
        return Outcome(refusal: nil, needsRestart: waiting)
    }

    /// Releases `replacement`'s retired objects in the background, tracked until done.
    private func release(_ replacement: ProviderReplacement, through builder: any ProviderBuilding) {
        let id = nextRelease.withLock { next in
            defer { next += 1 }
            return next
        }
        // Inserted under the lock the task takes to remove itself, so it cannot finish first.
        releases.withLock { pending in
            pending[id] = Task { [self] in
                await builder.release(await replacement.retired())
                _ = releases.withLock { $0.removeValue(forKey: id) }
            }
        }
    }

    /// Returns once every release started by a reload is done (the daemon calls it on the way
    /// out, before shutting down the providers in force).
    public func releasesFinished() async {
        while let pending = releases.withLock({ $0.values.first }) { await pending.value }
    }

    private func refuse(_ problem: String) -> Outcome {
        logger.error(
            "configuration reload refused; the running configuration stays",
            metadata: ["tokenvault.error": "\(problem)"])
        return Outcome(refusal: problem, needsRestart: [])
    }

    static func sectionsNeedingRestart(_ old: DaemonConfiguration, _ new: DaemonConfiguration) -> [String] {
        var sections: [String] = []
        if old.socketPath != new.socketPath || old.socketMode != new.socketMode || old.socketGroup != new.socketGroup {
            sections.append("socket")
        }
        if old.storage != new.storage { sections.append("storage") }
        if old.providers != new.providers { sections.append("providers") }
        if old.connections != new.connections || old.tokenSizes != new.tokenSizes
            || old.maximumBodySize != new.maximumBodySize || old.idleTimeoutSeconds != new.idleTimeoutSeconds
            || old.onDemandRefreshSeconds != new.onDemandRefreshSeconds || old.leaseSeconds != new.leaseSeconds
            || old.maximumClockOffsetSeconds != new.maximumClockOffsetSeconds
            || old.retainAnswersSeconds != new.retainAnswersSeconds
        {
            sections.append("limits")
        }
        if old.eventLoops != new.eventLoops || old.groupRefreshSeconds != new.groupRefreshSeconds
            || old.coreDumps != new.coreDumps
        {
            sections.append("server")
        }
        if old.audit != new.audit { sections.append("audit") }
        if old.proxy != new.proxy { sections.append("proxy") }
        if old.logFormat != new.logFormat { sections.append("log.format") }
        if old.webhooks != new.webhooks { sections.append("webhooks") }
        if old.signInExpirySeconds != new.signInExpirySeconds
            || old.signInMaximumPendingPerUID != new.signInMaximumPendingPerUID
        {
            sections.append("sign_in")
        }
        return sections
    }
}
