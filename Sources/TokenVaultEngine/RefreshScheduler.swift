import Logging
import ServiceLifecycle
import TokenVaultCore

/// The daemon's refresh loop, as a `Service`.
///
/// One timer: it sleeps until the earliest `refresh_at` (read through the index, never a
/// scan), or until woken because a credential was stored or a refresh finished. Due
/// credentials start most urgent first, at most `maximumInFlight` at a time, each provider
/// paced by its gate, so a start-up with a backlog catches up without a thundering herd.
/// Attempts left open by a crash are resumed first. Device grants are polled beside it. On shutdown it stops starting refreshes
/// and waits for those in flight to commit, so a graceful stop never strands a rotation.
public struct RefreshScheduler: Service {
    let engine: RefreshEngine
    /// Longest sleep when nothing is due (a safety net; waking is normally by signal).
    let maximumSleep: Double
    /// How long shutdown waits for in-flight refreshes.
    let drainTimeout: Double

    public init(engine: RefreshEngine, maximumSleep: Double = 300, drainTimeout: Double = 30) {
        self.engine = engine
        self.maximumSleep = maximumSleep
        self.drainTimeout = drainTimeout
    }

    public func run() async throws {
        let wakeOnStore = Task { [engine] in
            for await _ in engine.vault.events.subscribe(kinds: [.stored]) {
                engine.wakeScheduler()
            }
        }
        defer { wakeOnStore.cancel() }
        await cancelWhenGracefulShutdown { await loop() }
        await drain()
    }

    private func loop() async {
        // A courier of an earlier daemon may still be finishing its calls: its answers are read
        // before anything is recovered or resumed (token reads are served meanwhile).
        guard await engine.settlement.waitUntilReady(), !Task.isCancelled else {
            // Nothing is recovered or resumed without the spool: an attempt closed now would make
            // the next daemon drop the answer an earlier courier spooled for it.
            engine.logger.warning("the spool was not read; no refresh starts until a courier does")
            // The daemon stops (the courier's service says why): this service ends with it.
            try? await gracefulShutdown()
            return
        }
        await engine.recoverSpool()
        // Device grants are polled once the spool is recovered: a grant whose tokens a courier
        // spooled is ended by storing them, not by a poll that finds its code spent.
        let devicePoller = Task { [engine] in await engine.runDevicePoller() }
        defer { devicePoller.cancel() }
        await resumeOpenAttempts()
        var lastPrune = engine.vault.clock.now
        while !Task.isCancelled {
            var delay: Double = 1
            var retryAt: ContinuousClock.Instant?
            do {
                // While this node's clock is refused (`CorrectedClock`) nothing comes due here
                // (other nodes refresh), nor while a failover is reconciled (`FailoverGuard`), but
                // what it holds (stranded refreshes) is finished.
                let refused = engine.vault.clock.refusal != nil || engine.vault.failover.refusal() != nil
                let scan = refused ? Scan(due: true) : try await startDueRefreshes()
                retryAt = try await restartStranded()
                // A full page started: more may be due beyond it. Otherwise everything due is in
                // flight, and a finishing refresh wakes the loop; only with nothing due is the
                // next due time read.
                if scan.started > 0, scan.fullPage { continue }
                delay = scan.due ? 1 : try await secondsUntilNextDue()
                if engine.vault.clock.now.seconds - lastPrune.seconds > 600 {
                    lastPrune = engine.vault.clock.now
                    try await pruneJournal()
                }
            } catch is CancellationError {
                return
            } catch {
                engine.logger.error("refresh scheduler: \(error)")
                delay = 1
            }
            // Counted from now, after the reads above: a stranded refresh's wait is a time.
            if let retryAt { delay = min(delay, max(0.001, (retryAt - .now) / .seconds(1))) }
            await engine.wake.wait(seconds: delay)
        }
    }

    /// What one pass over the due list did.
    struct Scan {
        var started = 0
        /// Something is due or in flight (so a finishing refresh will wake the loop).
        var due: Bool
        /// The scan returned as many credentials as it asked for.
        var fullPage = false
    }

    /// Starts refreshes for due credentials not already in flight. Under load the scan waits
    /// until a sixteenth of the slots are free rather than running at every finished refresh
    /// (a scan reads as many rows as there are free slots, and on PostgreSQL claims them); the
    /// refreshes in flight, due until journalled, are skipped by the scan itself.
    private func startDueRefreshes() async throws -> Scan {
        let inFlight = engine.inFlightIDs
        let capacity = engine.options.maximumInFlight - inFlight.count
        guard capacity > 0, inFlight.isEmpty || capacity >= max(1, engine.options.maximumInFlight / 16) else {
            return Scan(due: true)
        }
        let now = engine.vault.clock.now
        let due = try await engine.vault.dueCredentials(at: now, limit: capacity, skipping: inFlight)
        var scan = Scan(due: !due.isEmpty || !inFlight.isEmpty, fullPage: due.count == capacity)
        for credential in due where scan.started < capacity {
            if engine.startInBackground(credential.id, reason: .scheduled) { scan.started += 1 }
        }
        return scan
    }

    /// Refreshes a storage error ended (`StrandedRefreshes`) whose wait is over, within the free
    /// slots: those with an attempt of this process open (one read of the journal, a hint: the
    /// resumption itself resumes only what is still open, `RefreshReason.resumption`) are
    /// resumed, the rest forgotten (nothing of theirs was journalled, or it was closed: the due
    /// list has them). Returns when the next wait ends (nil: none waiting; ready ones left over
    /// wait for a slot, and a finishing refresh wakes the loop).
    private func restartStranded() async throws -> ContinuousClock.Instant? {
        guard !engine.stranded.isEmpty else { return nil }
        var inFlight = engine.inFlightIDs
        var (ids, nextAt) = engine.stranded.take(
            limit: engine.options.maximumInFlight - inFlight.count, skipping: inFlight)
        guard !ids.isEmpty else { return nextAt }
        // Only entries ready before the read began are judged by it (one failing during the
        // read may have journalled after it).
        let readStart = ContinuousClock.now
        let open: Set<CredentialID>
        do {
            let owner = engine.leases.owner.id
            open = Set(
                try await engine.vault.openAttempts(limit: 100_000).filter { $0.leaseOwner == owner }.map(
                    \.credentialID))
        } catch {
            for id in ids { engine.stranded.putBack(id) }
            throw error
        }
        // Those forgotten take no slot: take more until the slots or the ready ones run out.
        while !ids.isEmpty {
            for id in ids {
                if !open.contains(id) {
                    engine.stranded.settle(id)
                } else if !engine.startInBackground(id, reason: .resumption) {
                    engine.stranded.putBack(id)
                }
            }
            inFlight = engine.inFlightIDs
            let capacity = engine.options.maximumInFlight - inFlight.count
            guard capacity > 0, ids.contains(where: { !open.contains($0) }) else { break }
            (ids, nextAt) = engine.stranded.take(limit: capacity, skipping: inFlight, now: readStart)
        }
        return nextAt
    }

    /// Seconds to sleep: until the earliest `refresh_at`, or briefly if something is due but
    /// every due credential is already in flight (a finishing refresh wakes the loop).
    private func secondsUntilNextDue() async throws -> Double {
        let next = try await engine.vault.earliestRefreshAt()
        guard let next else { return maximumSleep }
        let wait = next.seconds - engine.vault.clock.now.seconds
        return wait > 0 ? min(wait + 0.001, maximumSleep) : 1
    }

    /// Attempts found open at start-up: the daemon died (or another process did) between
    /// journalling and committing. Retried with the same refresh token.
    private func resumeOpenAttempts() async {
        do {
            let open = try await engine.vault.openAttempts(limit: 100_000)
            if !open.isEmpty {
                engine.logger.notice("resuming \(open.count) refresh attempt(s) left open by an earlier run")
            }
            for attempt in open {
                while engine.inFlightCount >= engine.options.maximumInFlight { await engine.wake.wait(seconds: 0.1) }
                _ = engine.startInBackground(attempt.credentialID, reason: .recovery)
            }
        } catch {
            engine.logger.error("refresh scheduler: cannot read the journal: \(error)")
        }
    }

    private func pruneJournal() async throws {
        let before = engine.vault.clock.now.adding(seconds: -engine.options.journalRetention)
        while try await engine.vault.pruneFinishedAttempts(before: before, limit: 1000) == 1000 {}
    }

    /// Waits for refreshes in flight and for answers the ledger still holds (their commit
    /// failed and is being retried): both carry tokens that exist nowhere else.
    private func drain() async {
        let deadline = ContinuousClock.now + .seconds(drainTimeout)
        while engine.inFlightCount > 0 || engine.vault.pendingCommitCount > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if engine.inFlightCount > 0 {
            engine.logger.warning(
                "stopping with \(engine.inFlightCount) refresh(es) still in flight; resumed on next start")
        }
        if engine.vault.pendingCommitCount > 0 {
            engine.logger.critical(
                "stopping with provider answers the database never accepted; those credentials are resumed with their stored refresh token on next start",
                metadata: ["tokenvault.commit.held": "\(engine.vault.pendingCommitCount)"])
        }
    }
}
