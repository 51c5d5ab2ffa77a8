import Logging
import ServiceLifecycle
import Synchronization
import TokenVaultCore
import TokenVaultSystem
import UnixSignals

/// Re-reads the configuration file on SIGHUP (`systemctl reload tokenvault`) and puts in force
/// what can change without a restart: the access rules, the log level and each provider
/// instance's limits (concurrency, rate, breaker, retries). Connections and streams stay open;
/// the next request is judged by the new rules, the next provider call by the new limits.
///
/// A file that does not parse or validate is refused as a whole: the error is logged with the
/// file and key, and the running configuration stays. Settings that only a restart applies
/// (socket, storage, a provider instance added, removed or given new endpoints or secrets,
/// `limits.*`, event loops) are compared, and each one that differs is logged as waiting for a
/// restart.
public final class ConfigurationReload: Service, Sendable {
    public struct Outcome: Sendable, Equatable {
        /// Nil when the new file was put in force.
        public var refusal: String?
        /// Top-level sections that changed on disk but wait for a restart.
        public var needsRestart: [String]
    }

    private let load: @Sendable () throws -> DaemonConfiguration
    private let api: VaultAPI
    private let levels: LogLevelSwitch
    private let notifier: SystemdNotifier
    private let status: @Sendable () async -> String
    private let providerLimits: @Sendable ([String: ProviderLimits]) -> Void
    private let logger: Logger
    private let running: Mutex<DaemonConfiguration>

    /// `load` reads the file and applies the environment, as start-up did; `status` is the
    /// `STATUS=` line sent with `READY=1` when the reload is done; `providerLimits` puts
    /// instances' new limits in force (the refresh engine's).
    public init(
        running: DaemonConfiguration, load: @escaping @Sendable () throws -> DaemonConfiguration, api: VaultAPI,
        levels: LogLevelSwitch, notifier: SystemdNotifier, status: @escaping @Sendable () async -> String,
        providerLimits: @escaping @Sendable ([String: ProviderLimits]) -> Void = { _ in }, logger: Logger
    ) {
        self.running = Mutex(running)
        self.load = load
        self.api = api
        self.levels = levels
        self.notifier = notifier
        self.status = status
        self.providerLimits = providerLimits
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
        let outcome = apply()
        notifier.send("READY=1\nSTATUS=\(await status())")
        return outcome
    }

    private func apply() -> Outcome {
        let fresh: DaemonConfiguration
        do {
            fresh = try load()
        } catch {
            let problem = (error as? ConfigurationError)?.description ?? "\(error)"
            logger.error(
                "configuration reload refused; the running configuration stays",
                metadata: ["tokenvault.error": "\(problem)"])
            return Outcome(refusal: problem, needsRestart: [])
        }
        let previous = running.withLock { $0 }
        api.livePolicy.replace(rules: fresh.rules)
        levels.level = fresh.logLevel
        let retuned = Self.limitsChanged(previous.providers, fresh.providers)
        providerLimits(retuned)
        // What a restart would apply stays as it runs, so that it is reported again next time.
        var applied = previous
        applied.rules = fresh.rules
        applied.logLevel = fresh.logLevel
        for (name, limits) in retuned { applied.providers[name]?.limits = limits }
        let waiting = Self.sectionsNeedingRestart(applied, fresh)
        running.withLock { $0 = applied }
        for section in waiting {
            logger.warning(
                "configuration changed where only a restart applies it", metadata: ["tokenvault.key": "\(section)"])
        }
        logger.notice(
            "configuration reloaded",
            metadata: [
                "tokenvault.access.rules": "\(fresh.rules.count)", "tokenvault.log.level": "\(fresh.logLevel)",
                "tokenvault.provider.limits_changed": "\(retuned.keys.sorted().joined(separator: ","))",
            ])
        return Outcome(refusal: nil, needsRestart: waiting)
    }

    /// Instances in both whose settings differ in their limits alone, with the new limits.
    static func limitsChanged(_ old: [String: ProviderSettings], _ new: [String: ProviderSettings]) -> [String:
        ProviderLimits]
    {
        var changed: [String: ProviderLimits] = [:]
        for (name, fresh) in new {
            guard var current = old[name], current.limits != fresh.limits else { continue }
            current.limits = fresh.limits
            if current == fresh { changed[name] = fresh.limits }
        }
        return changed
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
            || old.onDemandRefreshSeconds != new.onDemandRefreshSeconds
        {
            sections.append("limits")
        }
        if old.eventLoops != new.eventLoops || old.groupRefreshSeconds != new.groupRefreshSeconds
            || old.coreDumps != new.coreDumps
        {
            sections.append("server")
        }
        if old.audit != new.audit { sections.append("audit") }
        if old.logFormat != new.logFormat { sections.append("log.format") }
        return sections
    }
}
