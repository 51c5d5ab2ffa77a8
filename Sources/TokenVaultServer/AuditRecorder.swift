import Logging
import ServiceLifecycle
import Synchronization
import TokenVaultCore
import TokenVaultLedger

/// Collects the audit rows of requests and writes them through the ledger in batches (one
/// transaction per flush), so that auditing every token read does not cost a commit per
/// request and cannot fill the disk:
///
/// - Token reads and proxied calls that were served or refused (not denials) are aggregated: one
///   row per operation, caller (uid, gid, pid), credential, outcome and detail per `readInterval`, with a count and the
///   time of the last read it covers. At 40,000 reads/s that is a handful of rows a minute, not
///   3.5 billion a day. At most `maximumReadCounts` are kept in memory; more are written early.
///   Every other event (writes, exchanges, deletes, key operations, denials)
///   keeps a row of its own and is written within `flushInterval`.
/// - Rows older than `retention` and the oldest rows beyond `maximumRows` are pruned in small
///   batches (`Vault.pruneAudit`), the chain's anchor moving with them.
/// - A batch the database refuses is kept and written at the next flush, counted in
///   `writeFailures`; only beyond `maximumPending` events are the oldest dropped, counted in
///   `dropped` and logged. Nothing is lost silently.
///
/// Writes of credentials carry their audit row in their own transaction instead. A crash loses
/// what was not flushed yet: up to `flushInterval` of single events, `readInterval` of read counts.
public final class AuditRecorder: Service, Sendable {
    public struct Options: Sendable {
        public var flushInterval: Duration = .milliseconds(250)
        public var readInterval: Duration = .seconds(60)
        public var retention: Duration = .seconds(90 * 86_400)
        public var maximumRows = 1_000_000
        public var pruneInterval: Duration = .seconds(60)
        public var maximumPending = 100_000
        /// Read counts kept in memory at most (one per caller and credential): beyond this they
        /// are written at the next flush instead of at the end of their interval, so a process
        /// reading a hundred thousand credentials a minute costs rows, not memory.
        public var maximumReadCounts = 10_000
        /// Rows per write of a flush: a flush of ten thousand read counts is ten short
        /// transactions, so neither the chained rows nor the writer's pages pile up at once.
        public var rowsPerWrite = 1_000

        public init() {}

        /// The operator's settings (`audit.*`).
        public init(_ settings: AuditSettings) {
            readInterval = .seconds(settings.readIntervalSeconds)
            retention = .seconds(settings.retentionDays * 86_400)
            maximumRows = settings.maximumRows
        }
    }

    /// Counters for `/metrics`.
    public struct Counters: Sendable, Equatable {
        public var written = 0
        public var writeFailures = 0
        public var dropped = 0
        public var pruned = 0
        public var pending = 0
    }

    /// Operations counted rather than written a row each: token reads and proxied calls (whose
    /// detail names the method, the upstream origin and path, and the status class).
    static let aggregatedOperations: Set<String> = [AuditOperation.tokenRead.name, AuditOperation.credentialProxy.name]

    /// What aggregates one token-read (or proxied-call) row.
    private struct ReadKey: Hashable {
        let operation: String
        let uid: UInt32?
        let gid: UInt32?
        let pid: Int32?
        let credentialID: CredentialID?
        let outcome: AuditEvent.Outcome
        let detail: String?
    }

    /// The reads one row stands for (the key holds the rest, not a second copy of it).
    private struct ReadCount {
        let first: Timestamp
        var last: Timestamp
        var count: Int
    }

    private struct State {
        var events: [AuditEvent] = []
        var reads: [ReadKey: ReadCount] = [:]
        var readsSince = ContinuousClock.now
        /// Set when `reads` reached `maximumReadCounts`: the next flush writes them.
        var readsFull = false
        var counters = Counters()
    }

    private let vault: Vault
    private let options: Options
    private let logger: Logger
    private let state = Mutex(State())
    /// The last flush started; the next one runs after it.
    private let tail = Mutex<Task<Void, Never>?>(nil)
    /// Wakes the loop when there is something to write (it sleeps otherwise).
    private let wake = WakeSignal()

    public init(vault: Vault, options: Options = Options(), logger: Logger) {
        self.vault = vault
        self.options = options
        self.logger = logger
    }

    public func record(_ event: AuditEvent) {
        // The loop sleeps while nothing is pending: the first row after a quiet spell wakes it.
        let wasIdle = state.withLock { state -> Bool in
            let wasIdle = state.events.isEmpty && state.reads.isEmpty
            guard Self.aggregatedOperations.contains(event.operation), event.outcome != .denied else {
                state.events.append(event)
                return wasIdle
            }
            let key = ReadKey(
                operation: event.operation, uid: event.uid, gid: event.gid, pid: event.pid,
                credentialID: event.credentialID,
                outcome: event.outcome, detail: event.detail)
            // One hash lookup per read, the row updated in place.
            if let index = state.reads.index(forKey: key) {
                state.reads.values[index].count += 1
                state.reads.values[index].last = event.at
            } else {
                state.reads[key] = ReadCount(first: event.at, last: event.at, count: 1)
                if state.reads.count >= options.maximumReadCounts {
                    state.readsFull = true
                    return true
                }
            }
            return wasIdle
        }
        if wasIdle { wake.signal() }
    }

    public var counters: Counters {
        state.withLock { state in
            var counters = state.counters
            counters.pending = state.events.count + state.reads.count
            return counters
        }
    }

    public func run() async throws {
        var lastPrune = ContinuousClock.now
        await withGracefulShutdownHandler {
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                // Asleep until there is something to write or prune: an idle daemon does not
                // wake four times a second to find nothing. Events are then written
                // within `flushInterval`, gathered into one batch.
                await wake.wait(seconds: secondsUntilWork(lastPrune: lastPrune))
                guard !Task.isShuttingDownGracefully else { break }
                try? await Task.sleep(for: options.flushInterval)
                await flush(includingReads: false)
                if ContinuousClock.now - lastPrune >= options.pruneInterval {
                    lastPrune = .now
                    await prune()
                }
            }
        } onGracefulShutdown: { [wake] in
            wake.signal()
        }
        await flush()
    }

    /// Seconds until the loop has work: none while events wait (or read counts are full); the end
    /// of the read counts' interval; otherwise the next prune.
    private func secondsUntilWork(lastPrune: ContinuousClock.Instant) -> Double {
        let (eventsWaiting, readsDue) = state.withLock { state -> (Bool, ContinuousClock.Instant?) in
            (
                !state.events.isEmpty || state.readsFull,
                state.reads.isEmpty ? nil : state.readsSince + options.readInterval
            )
        }
        guard !eventsWaiting else { return 0 }
        let next = min(lastPrune + options.pruneInterval, readsDue ?? lastPrune + options.pruneInterval)
        return max(0, (next - ContinuousClock.now) / .seconds(1))
    }

    /// Writes every pending row now, aggregated reads included (shutdown, `GET /v1/admin/audit`).
    public func flush() async { await flush(includingReads: true) }

    private func flush(includingReads forceReads: Bool) async {
        // One flush at a time, in order: each waits for the one before it, so when a caller's
        // flush returns every row recorded before it has been written (or kept after a failure).
        let flush = tail.withLock { tail -> Task<Void, Never> in
            let previous = tail
            let next = Task { [self] in
                await previous?.value
                await writeOnce(includingReads: forceReads)
            }
            tail = next
            return next
        }
        await flush.value
    }

    private func writeOnce(includingReads forceReads: Bool) async {
        // Take the batch under the lock; write it outside (the event loops append meanwhile).
        let batch = state.withLock { state -> [AuditEvent] in
            var batch = state.events
            state.events.removeAll(keepingCapacity: true)
            if forceReads || state.readsFull || ContinuousClock.now - state.readsSince >= options.readInterval {
                let readsStart = batch.count
                batch.reserveCapacity(batch.count + state.reads.count)
                for (key, read) in state.reads {
                    batch.append(
                        AuditEvent(
                            at: read.first, uid: key.uid, gid: key.gid, pid: key.pid,
                            operation: AuditOperation(stored: key.operation),
                            credentialID: key.credentialID, outcome: key.outcome, detail: key.detail,
                            count: read.count, lastAt: read.count > 1 ? read.last : nil))
                }
                batch[readsStart...].sort { $0.at < $1.at }
                // Keeping the capacity (at most `maximumReadCounts`): refilling the table from
                // empty every flush would reallocate it at every doubling.
                state.reads.removeAll(keepingCapacity: true)
                state.readsSince = .now
                state.readsFull = false
            }
            return batch
        }
        var unwritten = batch[...]
        while !unwritten.isEmpty {
            let rows = Array(unwritten.prefix(options.rowsPerWrite))
            do {
                try await vault.appendAudits(rows)
            } catch {
                keep(Array(unwritten), after: error)
                return
            }
            unwritten = unwritten.dropFirst(rows.count)
            state.withLock { $0.counters.written += rows.count }
        }
    }

    /// Puts rows the database refused back in front, to be written first at the next flush;
    /// beyond `maximumPending` the oldest go, counted and logged.
    private func keep(_ batch: [AuditEvent], after error: any Error) {
        let dropped = state.withLock { state -> Int in
            state.counters.writeFailures += 1
            state.events = batch + state.events
            let excess = max(0, state.events.count - options.maximumPending)
            if excess > 0 {
                state.events.removeFirst(excess)
                state.counters.dropped += excess
            }
            return excess
        }
        logger.error(
            "audit rows not written; kept for the next flush",
            metadata: ["tokenvault.audit.rows": "\(batch.count)", "tokenvault.error": "\(error)"])
        if dropped > 0 {
            logger.critical(
                "audit rows dropped: the database has refused audit writes for too long",
                metadata: ["tokenvault.audit.dropped": "\(dropped)"])
        }
    }

    private func prune() async {
        let before = vault.clock.now.adding(seconds: -Double(options.retention.components.seconds))
        do {
            let pruned = try await vault.pruneAudit(before: before, keepingAtMost: options.maximumRows)
            if pruned > 0 { state.withLock { $0.counters.pruned += pruned } }
        } catch {
            logger.error("audit rows could not be pruned", metadata: ["tokenvault.error": "\(error)"])
        }
    }
}
