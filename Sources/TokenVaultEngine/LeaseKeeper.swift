import Foundation
import Logging
import Synchronization
import TokenVaultCore
import TokenVaultLedger

/// This node's side of the leases: it keeps them alive, fences itself when it cannot,
/// and judges when another node's may be taken over.
///
/// - **Renewal.** Every `interval` one heartbeat (`Vault.heartbeat`, one statement) raises this
///   node's counter in the `nodes` table: that renews every attempt journalled under its name
///   (in flight, called, answered but held), however many. (Every `idleInterval` while an
///   SQLite daemon holds nothing: see there.)
/// - **Fencing.** A provider call is sent only while the last renewal is younger than
///   `fenceAfter` (a third of the period; a beat is tried inline first if the loop is behind). A
///   node that cannot renew sends nothing new and resumes those refreshes when a beat goes through.
///   An attempt journalled before a lapse in renewals is journalled again before its call: another
///   node may have taken it over meanwhile.
/// - **Takeover.** Another node's attempt is resumed only when this node watched that node's
///   counter stand still for a whole `period` while its own beats went through one after another
///   (`SilenceWatch`), and the counter still has that value inside the journalling transaction.
///   A database that was down for everyone is not silence: every watch starts over.
final class LeaseKeeper: Sendable {
    let owner: LeaseOwner
    /// How long a silent node keeps its leases (seconds of the database's time).
    let period: Double
    /// Seconds between beats.
    let interval: Double
    /// Seconds between beats while the node holds nothing, on a vault no other process can
    /// journal in (SQLite, one daemon per file); nil: `interval` always. There no node watches
    /// this one's counter, and `permit` beats first when the last renewal is `fenceAfter` old, so
    /// an idle daemon need not wake every few seconds for a statement nobody reads.
    let idleInterval: Double?
    /// Work started (`noteActivity`): the loop leaves its idle wait and beats at `interval` again.
    private let activity = WakeSignal()
    /// No provider call is sent when the last renewal is older than this.
    var fenceAfter: Double { period / 3 }

    private let vault: Vault
    private let statistics: RefreshStatistics?
    /// The credentials whose refresh runs in this process now (the engine's single flight).
    private let inFlight: @Sendable () -> Set<CredentialID>
    private let logger: Logger
    private let state: Mutex<State>
    /// For operators only (`tokenvault nodes`), read once: `ProcessInfo.hostName` resolves the
    /// name through the resolver, which can block for seconds where DNS does not answer.
    private let host: String = {
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, name.count) == 0 else { return "unknown" }
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    private struct State {
        var watch: SilenceWatch
        /// When the last beat that went through was sent (this host's monotonic clock).
        var lastRenewal: ContinuousClock.Instant?
        /// Renewals that came after a gap of `fenceAfter` or more: an attempt journalled before
        /// one may have been taken over.
        var lapses = 0
        var failures = 0
        /// Refreshes held back while renewal failed, started again once it works.
        var onRenewal: [@Sendable () -> Void] = []
        /// The loop waited `idleInterval` holding nothing: the gap before the next beat is no lapse
        /// (no lease was held across it, and no other process watches this node's counter).
        var idled = false
        /// The beat `permit` runs for everyone waiting, if one is running.
        var inlineBeat: Task<Bool, Never>?
        /// After renewal came back from a lapse or failures: the held answers' commits, which
        /// every provider call waits for (what the node holds is stored before anything new).
        var recovery: Task<Void, Never>?
        /// Writing back what the database lost in a failover (`reconcile`), while it runs.
        var reconciliation: Task<Void, Never>?
        /// When kept commits were last pruned.
        var prunedAt: ContinuousClock.Instant?
    }

    init(
        owner: LeaseOwner, period: Double, interval: Double, idleInterval: Double? = nil, vault: Vault,
        statistics: RefreshStatistics? = nil, inFlight: @escaping @Sendable () -> Set<CredentialID> = { [] },
        logger: Logger
    ) {
        self.owner = owner
        self.period = period
        self.interval = interval
        self.idleInterval = idleInterval
        self.vault = vault
        self.statistics = statistics
        self.inFlight = inFlight
        self.logger = logger
        state = Mutex(State(watch: SilenceWatch(period: period, maximumGap: period / 3)))
    }

    /// The beat interval a period gets by default: ten beats a period, at most 10 s apart.
    static func interval(for period: Double) -> Double { max(0.05, min(10, period / 10)) }

    /// One heartbeat. False when it did not go through (this node is not renewing).
    @discardableResult
    func beat() async -> Bool {
        let sentAt = ContinuousClock.now
        let corrected = vault.clock as? CorrectedClock
        let beat = NodeBeat(
            node: owner.node, incarnation: owner.incarnation, host: host, pid: Int64(getpid()),
            clockOffset: corrected?.offset, reconciledTimeline: vault.failover.reconciledTimeline)
        do {
            let hostSentAt = corrected?.base.now
            let reading = try await vault.heartbeat(beat)
            if let corrected, let hostSentAt {
                measure(corrected, reading.databaseNow, sentAt: hostSentAt)
            }
            let (resumed, lapsed, waiting) = state.withLock { state -> (Int, Bool, [@Sendable () -> Void]) in
                let lapsed =
                    !state.idled && (state.lastRenewal.map { sentAt - $0 >= .seconds(fenceAfter) } ?? false)
                state.idled = false
                if lapsed { state.lapses += 1 }
                if state.lastRenewal.map({ $0 < sentAt }) ?? true { state.lastRenewal = sentAt }
                state.watch.observe(reading)
                defer {
                    state.failures = 0
                    state.onRenewal = []
                }
                return (state.failures, lapsed, state.onRenewal)
            }
            if resumed > 0 {
                logger.notice(
                    "heartbeat renewed; leases held again",
                    metadata: ["tokenvault.node": "\(owner.node)", "tokenvault.heartbeat.failures": "\(resumed)"])
            }
            if resumed > 0 || lapsed {
                recover(thenStart: waiting)
            } else {
                for start in waiting { start() }
            }
            if vault.failover.observe(reading, node: owner.node, period: period), let timeline = reading.timeline {
                reconcile(timeline)
            } else {
                pruneKept()
            }
            return true
        } catch {
            let failures = state.withLock { state in
                state.watch.lostContact()
                state.failures += 1
                return state.failures
            }
            if failures == 1 || failures % 10 == 0 {
                logger.warning(
                    "heartbeat failed; no provider call is sent once the leases are \(Int(fenceAfter)) s old",
                    metadata: [
                        "tokenvault.node": "\(owner.node)", "tokenvault.heartbeat.failures": "\(failures)",
                        "tokenvault.error": "\(error)",
                    ])
            }
            return false
        }
    }

    /// Takes the beat's reading of the database's clock, and says so in the log when the offset
    /// crosses `CorrectedClock.maximumOffset` either way.
    private func measure(_ clock: CorrectedClock, _ databaseNow: Timestamp, sentAt: Timestamp) {
        let wasRefused = clock.offset != nil && clock.refusal != nil
        guard clock.record(databaseNow: databaseNow, sentAt: sentAt, receivedAt: clock.base.now) else { return }
        let refusal = clock.refusal
        if !wasRefused, let refusal {
            logger.error(
                "\(refusal.message)",
                metadata: [
                    "tokenvault.node": "\(owner.node)", "tokenvault.clock.offset_seconds": "\(clock.offset ?? 0)",
                ])
        } else if wasRefused, refusal == nil {
            logger.notice(
                "this node's clock is within limits.max_clock_offset_seconds of the database's again; serving and refreshing",
                metadata: [
                    "tokenvault.node": "\(owner.node)",
                    "tokenvault.clock.offset_seconds": "\(clock.offset ?? 0)",
                ])
        }
    }

    /// Renewed after failures or a lapse: commits what the node holds (answers received while the
    /// database was unreachable) before any provider call goes out, then starts the refreshes
    /// that were held back. Waits at most a beat interval for the commits: they stay held and
    /// retried if the database refuses them still, and the leases stay renewed meanwhile.
    private func recover(thenStart waiting: [@Sendable () -> Void]) {
        let task = Task { [vault, interval, logger] in
            let held = await vault.commitHeldNow(waitingUpTo: max(1, interval))
            if held > 0 {
                logger.warning(
                    "leases renewed, but \(held) received answer(s) are still held; new refreshes start anyway")
            }
            for start in waiting { start() }
        }
        state.withLock { $0.recovery = task }
    }

    /// The database is on a timeline this node has not reconciled (a failover, or this node's
    /// first beat): writes back what it kept that the database lost, records the timeline, beats
    /// at once so the other nodes read it, and commits the answers it held meanwhile. Tried again
    /// at the next beat if it fails. One at a time.
    private func reconcile(_ timeline: Int64) {
        state.withLock { state in
            guard state.reconciliation == nil else { return }
            state.reconciliation = Task { [self] in
                defer { self.state.withLock { $0.reconciliation = nil } }
                guard await reconciled(timeline) else { return }
                vault.failover.reconciled(timeline)
                await beat()
                await vault.commitHeldNow(waitingUpTo: max(1, interval))
            }
        }
    }

    /// Journals again the attempts this node has out, then writes back what it keeps (nothing
    /// when it already did for `timeline`, before a restart, or keeps nothing). False when it
    /// could not.
    private func reconciled(_ timeline: Int64) async -> Bool {
        do {
            let rejournalled = try await vault.rejournal(inFlight: inFlight())
            if rejournalled > 0 {
                logger.error(
                    "the database on timeline \(timeline) had lost the journal of \(rejournalled) refresh(es) this node has out; journalled them again",
                    metadata: ["tokenvault.node": "\(owner.node)", "tokenvault.database.timeline": "\(timeline)"])
            }
            guard let retention = vault.retention, retention.reconciledTimeline != timeline else { return true }
            let report = try await vault.reapply(try retention.retained(), timeline: timeline)
            try retention.markReconciled(timeline)
            statistics?.record {
                $0.failoverReapplied += report.reapplied.count
                $0.failoverMissing += report.missing.count
            }
            let metadata: Logger.Metadata = [
                "tokenvault.node": "\(owner.node)", "tokenvault.database.timeline": "\(timeline)",
                "tokenvault.failover.reapplied": "\(report.reapplied.count)",
                "tokenvault.failover.missing": "\(report.missing.count)",
                "tokenvault.failover.current": "\(report.current)",
            ]
            if !report.reapplied.isEmpty || !report.missing.isEmpty {
                let missing = report.missing.prefix(10).map(\.description).joined(separator: ", ")
                logger.error(
                    "the database is on timeline \(timeline) and lacked commits this node made: \(report.reapplied.count) re-applied (audited as credential.reapply), \(report.missing.count) whose credential it no longer has (not created again: \(missing))",
                    metadata: metadata)
            } else {
                logger.notice(
                    "the database's timeline \(timeline) holds every commit this node keeps", metadata: metadata)
            }
            return true
        } catch {
            logger.error(
                "cannot reconcile the commits this node keeps with the database on timeline \(timeline); refreshes wait",
                metadata: ["tokenvault.node": "\(owner.node)", "tokenvault.error": "\(error)"])
            return false
        }
    }

    /// Forgets kept commits past the retention period, at most once a minute, and only while the
    /// database's timeline is the one this node reconciled: across a failover nothing is dropped.
    /// The attempts remembered for re-journalling are tidied at the same pace.
    private func pruneKept() {
        guard vault.failover.refusal() == nil else { return }
        let due = state.withLock { state -> Bool in
            guard state.prunedAt.map({ ContinuousClock.now - $0 >= .seconds(60) }) ?? true else { return false }
            state.prunedAt = .now
            return true
        }
        guard due else { return }
        vault.forgetSettledAttempts(inFlight: inFlight())
        vault.retention?.prune()
    }

    /// Beats every `interval` until cancelled; every `idleInterval` (when set) while `isIdle`
    /// says the node holds nothing and the last beat went through, unless `noteActivity` cuts
    /// that wait short.
    func run(isIdle: @Sendable () -> Bool = { false }) async {
        while !Task.isCancelled {
            let renewed = await beat()
            if let idleInterval, renewed, isIdle(),
                state.withLock({ state in
                    state.idled = state.onRenewal.isEmpty
                    return state.idled
                })
            {
                await activity.wait(seconds: idleInterval)
            } else {
                try? await Task.sleep(for: .seconds(interval))
            }
        }
    }

    /// A refresh started: an idle wait ends, so its lease is renewed at `interval`. (Removals and
    /// code exchanges journal no attempt.) After an idle wait the refresh's `permit` beats first,
    /// and one failed beat then holds its call back until a beat goes through (`afterRenewal`):
    /// nothing is sent on a renewal older than `fenceAfter`.
    func noteActivity() {
        if idleInterval != nil { activity.signal() }
    }

    /// Seconds since the last beat that went through; nil before the first.
    var renewalAge: Double? {
        state.withLock { $0.lastRenewal.map { (ContinuousClock.now - $0) / .seconds(1) } }
    }

    /// Renewals after a lapse so far: taken before journalling, handed back to `permit`.
    var lapses: Int { state.withLock { $0.lapses } }

    enum Permit: Equatable {
        /// Renewed recently, and without a lapse since the attempt was journalled.
        case granted
        /// Renewed now, but after a lapse since the attempt was journalled: journal it again.
        case lapsed
        /// Not renewed for `fenceAfter`, and a beat now failed too: send nothing.
        case fenced
    }

    /// Whether a provider call for an attempt journalled when `lapses` was `journalled` may go.
    /// Cheap while the heartbeat loop keeps up (a lock, no statement). Only when the last renewal
    /// is `fenceAfter` old (the loop is behind, or none runs: an engine used on its own) does it
    /// beat itself, once for all the calls waiting at that moment.
    ///
    /// A node that has never beaten (its first beat failed, say on a SQLite file another
    /// connection holds for a moment) is not fenced: no node can have watched its counter, and
    /// one that finds its attempt watches it as absent for a whole period from then on.
    func permit(journalled: Int) async -> Permit {
        if !isRenewed { await beatShared() }
        if let recovery = state.withLock({ $0.recovery }) { await recovery.value }
        return state.withLock { state in
            guard let last = state.lastRenewal else { return .granted }
            guard ContinuousClock.now - last < .seconds(fenceAfter) else { return .fenced }
            return state.lapses == journalled ? .granted : .lapsed
        }
    }

    private var isRenewed: Bool {
        state.withLock { state in state.lastRenewal.map { ContinuousClock.now - $0 < .seconds(fenceAfter) } ?? false }
    }

    /// One beat for every caller that asks while it runs (a herd of calls must not each write one).
    private func beatShared() async {
        let task = state.withLock { state -> Task<Bool, Never> in
            if let running = state.inlineBeat { return running }
            let task = Task { await self.beat() }
            state.inlineBeat = task
            return task
        }
        _ = await task.value
        state.withLock { if $0.inlineBeat == task { $0.inlineBeat = nil } }
    }

    /// Runs `start` after the next beat that goes through.
    func afterRenewal(_ start: @escaping @Sendable () -> Void) { state.withLock { $0.onRenewal.append(start) } }

    /// Whether the attempt's holder is gone: released by an operator, an earlier run of this
    /// node, or a node whose counter this node watched stand still for a period and which still
    /// has that value (`currentBeat`, read inside the journalling transaction).
    func isGone(_ holder: String, currentBeat: () async throws -> Int64?) async throws -> Bool {
        if holder == LeaseName.released || owner.isEarlierRun(holder) { return true }
        let verdict = state.withLock { state -> SilenceWatch.Verdict in
            // Judged only while this node is watching: its own beats going through.
            guard let last = state.lastRenewal, ContinuousClock.now - last < .seconds(fenceAfter) else { return .heard }
            return state.watch.verdict(on: LeaseName.node(of: holder))
        }
        guard case .silent(let beat) = verdict else { return false }
        return try await currentBeat() == beat
    }

    /// As a failed beat does (tests that play a database gone away under this node).
    func lostContactForTesting() { state.withLock { $0.watch.lostContact() } }
}
