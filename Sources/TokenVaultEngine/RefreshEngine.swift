import Foundation
import Logging
import NIOPosix
import Synchronization
import TokenVaultCore
import TokenVaultLedger

/// The refresh engine: keeps credentials fresh, once per credential, without ever losing a
/// rotated refresh token.
///
/// - Every refresh and removal of a credential runs under `SingleFlight` (one at a time per
///   credential in this process) and under a lease in the refresh journal (across processes).
/// - Before a provider is called, the attempt is journalled durably; the new tokens,
///   generation + 1 and the attempt's close commit in one FULL transaction before anyone can
///   see the new access token. The engine decides; every write is one of the ledger's (`Vault`)
///   operations, which also holds an answer whose commit failed until it goes through.
/// - Calls to a provider pass its `ProviderGate`: circuit breaker, concurrency, rate.
/// - Failures are classified by the provider and decided by `FailurePolicy`.
///
/// The scheduler loop (`RefreshScheduler`) and the API (`RefreshService`) both come here.
public final class RefreshEngine: RefreshService, Sendable {
    public struct Options: Sendable {
        /// How long a node's heartbeat must be seen standing still before another node takes its
        /// refresh attempts over (`LeaseKeeper`); also when the scheduler comes back to a
        /// journalled credential nobody closed. Minutes by default: a paused process or a
        /// database failover must be a non-event, and a node that died for good is resumed by its
        /// next start at once, or released by `tokenvault nodes forget`.
        public var leasePeriod: Double
        /// Seconds between heartbeats; nil: `LeaseKeeper.interval(for:)`.
        public var heartbeatInterval: Double?
        /// Seconds between heartbeats while nothing is in flight or held, for a vault no other
        /// process journals in (SQLite); nil: `heartbeatInterval` always (`LeaseKeeper.idleInterval`).
        public var idleHeartbeatInterval: Double?
        /// Refreshes in flight at once over all providers (bounds memory and start-up bursts).
        public var maximumInFlight: Int
        /// Tries per token when revoking before the credential is left `revoke_pending`.
        public var revocationAttempts: Int
        /// Closed journal entries older than this are pruned.
        public var journalRetention: Double
        /// Called after each successful refresh with the time its phases took (benchmarks).
        public var timings: (@Sendable (RefreshTimings) -> Void)?
        /// At most one on-demand refresh per credential in this many seconds.
        public var onDemandInterval: Double = 10
        /// How long a token read waits for the refresh it asked for (or joined). A slow provider
        /// is waited for as long as its read timeout (a rotating call given up on costs the
        /// credential), but a read is answered 409 after this and the refresh goes on.
        public var onDemandWait: Double = 5
        /// The node this daemon is (its data directory's identity, `node.id`): an earlier run of
        /// the same node is resumed at once, another node's lease only after its silence (see
        /// `LeaseOwner`, `LeaseKeeper`).
        public var node: String = "local"
        /// Sign-ins' lifetime and the most one caller may have waiting (`sign_in.*`).
        public var signIn = SignInLimits()

        public init(
            leasePeriod: Double = 300, maximumInFlight: Int = 256, revocationAttempts: Int = 3,
            journalRetention: Double = 24 * 3600, timings: (@Sendable (RefreshTimings) -> Void)? = nil
        ) {
            self.leasePeriod = leasePeriod
            self.maximumInFlight = maximumInFlight
            self.revocationAttempts = revocationAttempts
            self.journalRetention = journalRetention
            self.timings = timings
        }
    }

    let vault: Vault
    /// Every instance credentials may name, by name, made from the table in force; a reload
    /// replaces it with the vault's table (`install`).
    let slots: Mutex<[String: ProviderSlot]>
    let options: Options
    let logger: Logger
    /// This node's leases: renewed by heartbeat, judged by observed silence.
    let leases: LeaseKeeper
    let flight: SingleFlight
    let wake = WakeSignal()
    /// Wakes the device grant poller (`RefreshEngine+DeviceGrant.swift`).
    let deviceWake = WakeSignal()
    let remoteWake: CoalescedWake
    let statistics: RefreshStatistics
    let onDemand: OnDemandLimiter
    let lostAnswers = LostAnswers()
    /// Tokens derived by RFC 8693 exchanges, until they near their expiry (never stored).
    let derivedTokens = DerivedTokens()
    /// Refreshes a storage error ended, for the scheduler to start again (`StrandedRefreshes`).
    let stranded = StrandedRefreshes()
    /// The courier, told when an answer it keeps is safe without it (`NoSettlement` without one).
    let settlement: any AnswerSettlement

    /// `providers` holds a `TokenProvider` for every configured instance that has endpoints;
    /// `settings` every instance credentials may name (their planner and limits).
    public convenience init(
        vault: Vault, providers: [String: any TokenProvider], settings: [String: ProviderSettings],
        options: Options = Options(), settlement: any AnswerSettlement = NoSettlement(), logger: Logger
    ) {
        self.init(
            vault: vault, table: ProviderTable(settings: settings, providers: providers), options: options,
            settlement: settlement, logger: logger)
    }

    /// `table`: the provider instances, put in force in the vault too (`install`).
    public init(
        vault: Vault, table: ProviderTable, options: Options = Options(),
        settlement: any AnswerSettlement = NoSettlement(), logger: Logger
    ) {
        self.vault = vault
        self.settlement = settlement
        self.options = options
        self.logger = logger
        let statistics = RefreshStatistics()
        self.statistics = statistics
        let flight = SingleFlight()
        self.flight = flight
        leases = LeaseKeeper(
            owner: LeaseOwner(node: options.node), period: options.leasePeriod,
            interval: options.heartbeatInterval ?? LeaseKeeper.interval(for: options.leasePeriod),
            idleInterval: options.idleHeartbeatInterval, vault: vault, statistics: statistics,
            inFlight: { flight.ids }, logger: logger)
        onDemand = OnDemandLimiter(interval: .milliseconds(Int64(options.onDemandInterval * 1000)))
        slots = Mutex(Self.slots(for: table, replacing: [:]).slots)
        vault.install(table)
        remoteWake = CoalescedWake(interval: .milliseconds(100)) { [wake] in wake.signal() }
        vault.observe(HeldCommitLog(logger: logger, wake: wake, statistics: statistics))
    }

    // MARK: RefreshService

    public func refresh(_ id: CredentialID, reason: RefreshReason) async throws -> RefreshOutcome {
        await flight.join(id) { [self] in await perform(id, reason) }
    }

    public func refreshOnDemand(_ id: CredentialID, minimumTTL: Double) async throws -> RefreshOutcome {
        // A refresh already in flight costs the provider nothing more: join it.
        guard !flight.isRunning(id) else { return await refreshWaitingAtMost(id) }
        let current = try await vault.metadata(id)
        if let refusal = onDemand.refusal(for: current, minimumTTL: minimumTTL) {
            statistics.record { $0.skipped += 1 }
            return .skipped(refusal, current)
        }
        let outcome = await refreshWaitingAtMost(id)
        // Why the token is not fresh matters more to a read the limit holds back than the limit.
        switch outcome {
        case .refreshed(let metadata): onDemand.record(id, produced: metadata.generation)
        case .failed(let failure, _): onDemand.record(id, produced: nil, outcome: "failed: \(failure.code)")
        case .skipped(let reason, _): onDemand.record(id, produced: nil, outcome: reason)
        case .commitPending: onDemand.record(id, produced: nil, outcome: "new tokens waiting for the database")
        case .tooSoon(_, let reason): onDemand.record(id, produced: nil, outcome: reason)
        }
        return outcome
    }

    /// Forced refreshes share the on-demand interval (`limits.on_demand_refresh_seconds`), counted
    /// from the credential's last attempt as stored (`last_refresh_attempt`), so a node that did
    /// not make that attempt counts it too.
    public func refreshForced(_ id: CredentialID) async throws -> RefreshOutcome {
        let current = try await vault.metadata(id)
        let since = max(0, vault.clock.now.seconds - current.lastRefreshAttempt.seconds)
        guard since >= options.onDemandInterval else {
            let wait = max(1, Int((options.onDemandInterval - since).rounded(.up)))
            statistics.record { $0.skipped += 1 }
            return .tooSoon(
                retryAfter: wait,
                "credential \(id) got its tokens or a provider answer \(Int(since)) s ago; force a refresh again in "
                    + "\(wait) s (limits.on_demand_refresh_seconds is \(Int(options.onDemandInterval)) s)")
        }
        return try await refresh(id, reason: .forced)
    }

    /// Joins (or starts) the credential's on-demand refresh and waits for it at most
    /// `options.onDemandWait`; past that the read gets `.skipped` and the refresh runs on.
    private func refreshWaitingAtMost(_ id: CredentialID) async -> RefreshOutcome {
        let wait = options.onDemandWait
        let answer = FirstAnswer<RefreshOutcome>()
        return await withCheckedContinuation { continuation in
            answer.await(continuation)
            // An event loop's timer, cancelled for good when the refresh answers first (a sleeping
            // task per read kept its timer until it would have fired).
            let timer = MultiThreadedEventLoopGroup.singleton.next().scheduleTask(
                in: .milliseconds(Int64(wait * 1000))
            ) {
                answer.give(
                    .skipped(
                        "a refresh is in flight and the provider has not answered within \(Int(wait)) s; "
                            + "its answer will be stored when it comes", nil))
            }
            flight.join(id, { [self] in await perform(id, .onDemand) }) { outcome in
                timer.cancel()
                answer.give(outcome)
            }
        }
    }

    public func providerStates() -> [ProviderState] {
        let slots = slots.withLock { $0 }
        return slots.keys.sorted().map { name in
            let slot = slots[name]!
            guard slot.provider != nil else {
                return ProviderState(
                    name: name, kind: slot.gate.kind, condition: .notConfigured,
                    detail: "no endpoint configured: credentials are stored but not refreshed")
            }
            return slot.gate.snapshot
        }
    }

    public var counters: RefreshCounters {
        var counters = statistics.snapshot
        (counters.heartbeatAge, counters.heartbeatLapses) = (leases.renewalAge, leases.lapses)
        counters.failoverHold = vault.failover.refusal() != nil
        return counters
    }

    /// Refreshes in flight in this process.
    public var inFlightCount: Int { flight.count }

    /// The credentials being refreshed (or removed) in this process now.
    var inFlightIDs: Set<CredentialID> { flight.ids }

    /// For the scheduler: starts a refresh in the background unless one is in flight.
    func startInBackground(_ id: CredentialID, reason: RefreshReason) -> Bool {
        flight.startIfIdle(id) { [self] in
            let outcome = await perform(id, reason)
            wake.signal()
            return outcome
        }
    }

    /// Keeps this node's leases alive until cancelled (the daemon's `LeaseHeartbeat` service).
    public func keepLeasesAlive() async {
        await leases.run { [flight, vault] in flight.count == 0 && vault.pendingCommitCount == 0 }
    }

    /// One heartbeat now, when the vault's clock is measured by them (`CorrectedClock`): the
    /// daemon beats once before it listens, so it decides about expiry on a measured clock from
    /// its first request. A beat that fails leaves the clock refused until one goes through.
    public func measureClock() async {
        guard vault.clock is CorrectedClock else { return }
        await leases.beat()
    }

    /// Wakes the scheduler (a sooner credential may have arrived).
    public func wakeScheduler() { wake.signal() }

    /// Wakes the scheduler within a tenth of a second, once for any number of calls meanwhile:
    /// for changes made by other nodes of a shared vault.
    public func wakeSchedulerSoon() { remoteWake.poke() }

    // MARK: Helpers

    func limits(for provider: String) -> ProviderLimits {
        slots.withLock { $0[provider] }?.gate.limits ?? ProviderLimits()
    }

    /// Whether `slot` still holds the provider object in force for `name` (a reload may have
    /// removed or re-pointed the instance while a call waited for its gate).
    func isCurrent(_ slot: ProviderSlot, _ name: String) -> Bool {
        slots.withLock { $0[name] }?.holdsSameProvider(as: slot.provider) ?? false
    }

    /// The slot of instance `name`, taken for a call: pair with `leave()`. Nil when no instance
    /// of that name is configured (any more).
    func enterSlot(_ name: String) -> ProviderSlot? {
        slots.withLock { slots in
            let slot = slots[name]
            slot?.enter()
            return slot
        }
    }
}
/// Where one successful refresh spent its time. `journal` and `commit` include waiting for the
/// group commit (and, for `commit`, sealing inside it).
public struct RefreshTimings: Sendable {
    public var journal: Duration = .zero
    public var http: Duration = .zero
    public var commit: Duration = .zero
}

/// A continuation resumed by whichever of several tasks answers first.
private final class FirstAnswer<Value: Sendable>: Sendable {
    private let waiting = Mutex<CheckedContinuation<Value, Never>?>(nil)

    func await(_ continuation: CheckedContinuation<Value, Never>) { waiting.withLock { $0 = continuation } }

    func give(_ value: Value) { waiting.withLock { $0.take() }?.resume(returning: value) }
}
