import Foundation
import Histogram
import TokenVaultCore
import TokenVaultEngine

/// `refresh`: sustained refreshes through the real engine against the loopback provider, in
/// one process, for `seconds` after a warm-up; then the safety checks (no refresh token
/// presented twice, no family revoked, the vault holds every credential's live token).
struct RefreshBench {
    var count = 10_000
    var seconds = 20.0
    var warmup = 3.0
    var settings = RefreshRig.Settings()
    var dataDir: String?

    /// Everything measured at one instant; the report uses differences of two.
    private struct Snapshot {
        var time: Double
        var serverRefreshes: Int
        var counters: RefreshCounters
        var usage: ResourceUsage
        var threads: ThreadCPU
        var machine: (busy: Double, total: Double)
        var store: InstrumentedStore.Counters
        /// The courier process's CPU seconds (0 without one).
        var courierCPU: Double

        init(_ rig: RefreshRig) {
            time = monotonicSeconds()
            serverRefreshes = rig.source.successfulRefreshes
            counters = rig.engine.counters
            usage = ResourceUsage.now()
            threads = ThreadCPU.now()
            machine = ProcessProbe.machineTicks()
            store = rig.store.snapshot
            courierCPU = rig.courier?.status.pid.map { ProcessProbe.cpuSeconds(statPath: "/proc/\($0)/stat") } ?? 0
        }
    }

    func run() async throws {
        print(Machine.describe())
        let rig = try await RefreshRig(settings: settings, dataDir: dataDir)
        let seeded = monotonicSeconds()
        try await rig.seed(count: count, lifetime: settings.lifetime)
        progress("stored \(grouped(count)) due credentials in \(format(monotonicSeconds() - seeded, 1)) s")
        let sizeBefore = try rig.checkpointedSize()

        let scheduler = RefreshScheduler(engine: rig.engine)
        let loop = Task { try? await scheduler.run() }
        try await Task.sleep(for: .seconds(warmup))
        rig.phases.start()
        rig.store.resetBatches()
        let first = Snapshot(rig)
        progress("measuring for \(format(seconds)) s")
        try await Task.sleep(for: .seconds(seconds))
        let last = Snapshot(rig)
        let phases = rig.phases.stop()

        loop.cancel()
        await loop.value
        let drainStarted = monotonicSeconds()
        while rig.engine.inFlightCount > 0, monotonicSeconds() - drainStarted < 30 {
            try await Task.sleep(for: .milliseconds(20))
        }
        let verification = try await rig.verify(count: count)
        report(rig, first, last, phases, verification)
        let sizeAfter = try rig.checkpointedSize()
        let total = rig.engine.counters.refreshed
        print(
            "database: \(format(Double(sizeBefore) / 1e6, 1)) MB after seeding, \(format(Double(sizeAfter) / 1e6, 1)) MB "
                + "after \(grouped(total)) refreshes (checkpointed): \(format(Double(sizeAfter - sizeBefore) / Double(max(total, 1)))) "
                + "bytes kept per refresh (closed journal entries, pruned after 24 h)")
        await rig.shutdown()
    }

    private func report(
        _ rig: RefreshRig, _ first: Snapshot, _ last: Snapshot, _ phases: PhaseRecorder.Phases,
        _ verification: (live: Int, notLive: [String], refreshesStored: Int)
    ) {
        let elapsed = last.time - first.time
        let serverRefreshes = last.serverRefreshes - first.serverRefreshes
        let refreshed = last.counters.refreshed - first.counters.refreshed
        let courierCPU = last.courierCPU - first.courierCPU
        let cpu = last.usage.cpuSeconds - first.usage.cpuSeconds + courierCPU
        let machineBusy =
            (last.machine.busy - first.machine.busy) / max(1, last.machine.total - first.machine.total)
            * Double(ProcessInfo.processInfo.activeProcessorCount)
        let perRefresh = { (value: Double) in value / Double(max(refreshed, 1)) }
        let durability =
            settings.durability == .normal ? "NORMAL (comparison only: NOT crash-safe for rotation)" : "FULL"
        print(
            """
            refresh: \(grouped(count)) credentials, provider: \(rig.source.name), access-token lifetime \(settings.lifetime) s, \
            provider concurrency \(settings.concurrency), engine maximumInFlight \(settings.maximumInFlight), \
            commits \(durability), \(format(warmup)) s warm-up + \(format(elapsed, 1)) s measured

            throughput: \(format(Double(serverRefreshes) / elapsed)) refreshes/s at the provider, \
            \(format(Double(refreshed) / elapsed)) refreshes/s committed by the engine
            CPU: \(format(cpu / elapsed, 2)) cores (engine and provider share this process; the courier's \
            \(format(courierCPU / elapsed, 2)) cores included), \(format(perRefresh(cpu) * 1e6)) µs per refresh; \
            machine busy \(format(machineBusy, 2)) cores
            context switches per refresh: \
            \(format(perRefresh(Double(last.usage.voluntarySwitches - first.usage.voluntarySwitches)), 1)) voluntary, \
            \(format(perRefresh(Double(last.usage.involuntarySwitches - first.usage.involuntarySwitches)), 1)) involuntary

            | phase (µs) | p50 | p90 | p99 | p99.9 | max | mean |
            | --- | --- | --- | --- | --- | --- | --- |
            """)
        for (name, histogram) in [
            ("journal (durable, group commit)", phases.journal), ("http (provider call)", phases.http),
            ("commit (seal and durable group commit)", phases.commit), ("sum of the three", phases.total),
        ] {
            print(
                "| \(name) | \(histogram.valueAtPercentile(50)) | \(histogram.valueAtPercentile(90)) | "
                    + "\(histogram.valueAtPercentile(99)) | \(histogram.valueAtPercentile(99.9)) | \(histogram.max) | "
                    + "\(format(histogram.mean)) |")
        }

        let store = last.store
        let earlier = first.store
        let transactions = store.transactions - earlier.transactions
        let writeSeconds = store.writeSeconds - earlier.writeSeconds
        let bodySeconds = store.bodySeconds - earlier.bodySeconds
        let dueQueries = store.dueQueries - earlier.dueQueries
        let batches = store.batches
        print(
            """

            writer: \(format(Double(transactions) / elapsed)) transactions/s \
            (\(store.fullTransactions - earlier.fullTransactions) FULL), \
            writes per transaction (group-commit batch) p50 \(batches.valueAtPercentile(50)), \
            p99 \(batches.valueAtPercentile(99)), max \(batches.max) (cap 256), \
            busy \(format(writeSeconds / elapsed * 100)) % of the time; per transaction \
            \(format((writeSeconds - bodySeconds) / Double(max(transactions, 1)) * 1e6)) µs BEGIN+COMMIT (fsync) and \
            \(format(bodySeconds / Double(max(transactions, 1)) * 1e6)) µs of writes
            scheduler: \(format(Double(dueQueries) / elapsed)) due-queries/s, \
            \(format(Double(store.dueRows - earlier.dueRows) / Double(max(dueQueries, 1)))) rows each, \
            \(format(perRefresh(store.dueSeconds - earlier.dueSeconds) * 1e6, 1)) µs of query per refresh; \
            \(format(perRefresh(Double(store.recordReads - earlier.recordReads)), 2)) row reads per refresh

            | thread group | threads | cores | CPU µs per refresh |
            | --- | --- | --- | --- |
            """)
        for group in last.threads.since(first.threads) where group.seconds > 0.005 * elapsed {
            print(
                "| \(group.group) | \(group.threads) | \(format(group.seconds / elapsed, 2)) | "
                    + "\(format(perRefresh(group.seconds) * 1e6)) |")
        }

        let counters = rig.engine.counters
        let twice = rig.source.refreshTokensPresentedTwice
        let revoked = rig.source.revokedFamilies
        let serverTotal = rig.source.successfulRefreshes
        var failures: [String] = []
        if twice != 0 { failures.append("\(twice) refresh token(s) presented twice") }
        if revoked != 0 { failures.append("\(revoked) token famil(ies) revoked by reuse detection") }
        if !counters.failed.isEmpty { failures.append("failed refreshes: \(counters.failed)") }
        if !verification.notLive.isEmpty {
            failures.append(
                "\(verification.notLive.count) credential(s) hold a refresh token the provider no longer accepts, "
                    + "e.g. \(verification.notLive.prefix(3).joined(separator: ", "))")
        }
        if verification.refreshesStored != serverTotal || counters.refreshed != serverTotal {
            failures.append(
                "the provider rotated \(serverTotal) times, the engine counted \(counters.refreshed) and the vault "
                    + "stored \(verification.refreshesStored) new generations")
        }
        print(
            """

            checks (whole run, warm-up and drain included): provider rotations \(serverTotal), engine refreshed \
            \(counters.refreshed), generations stored \(verification.refreshesStored), skipped \(counters.skipped), \
            failed \(counters.failed.values.reduce(0, +)); refresh tokens presented twice \(twice); \
            families revoked \(revoked); credentials holding their live refresh token \(verification.live) of \(count)
            """)
        if failures.isEmpty {
            print("checks: ok")
        } else {
            for failure in failures { print("FAILED: \(failure)") }
        }
        print(
            "RESULT mode=refresh provider=\(settings.provider.rawValue) durability=\(settings.durability == .normal ? "normal" : "full") count=\(count) "
                + "concurrency=\(settings.concurrency) inflight=\(settings.maximumInFlight) "
                + "rps=\(format(Double(refreshed) / elapsed)) cpu_us=\(format(perRefresh(cpu) * 1e6)) "
                + "journal_p50=\(phases.journal.valueAtPercentile(50)) http_p50=\(phases.http.valueAtPercentile(50)) "
                + "commit_p50=\(phases.commit.valueAtPercentile(50)) "
                + "journal_p99=\(phases.journal.valueAtPercentile(99)) http_p99=\(phases.http.valueAtPercentile(99)) "
                + "commit_p99=\(phases.commit.valueAtPercentile(99)) "
                + "ok=\(failures.isEmpty)")
    }
}
