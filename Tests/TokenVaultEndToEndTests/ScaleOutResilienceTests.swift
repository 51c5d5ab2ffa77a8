import Foundation
import Testing
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// Three daemons on one PostgreSQL vault against the punishing provider (rotating refresh
/// tokens, a family revoked when a spent one comes back, no grace window, answers after
/// 0.2-1 s), two of them SIGKILLed in turn and restarted while refreshes are in flight: each
/// refresh is done once across the nodes, none is lost, nothing is revoked. Node 1 keeps
/// running and serves readers throughout.
@Suite(.serialized) struct ScaleOutResilienceTests {
    static let count = 150

    @Test func threeNodesKilledInTurnRefreshEachCredentialOnce() async throws {
        let (server, database) = try await TestPostgres.makeDatabase()
        let harness = try await ResilienceHarness(
            lifetime: 8, graceWindow: 0,
            limits: #"{"concurrency": 16, "rate_per_second": 5000, "burst": 1000, "retry_base_seconds": 1}"#,
            refresh: #"{"lifetime_share": 0.5, "margin_seconds": 1, "jitter": 0.1}"#, answerDelay: 0.2...1,
            postgres: (server, database), nodes: 3)
        var daemons = [1: try harness.startDaemon(node: 1)]
        try harness.seed(Self.count)
        for node in 2...3 { daemons[node] = try harness.startDaemon(node: node) }

        let end = Date().addingTimeInterval(40)
        async let reads = offThePool {
            try harness.readTokens(until: end, count: Self.count, minimumTTL: 0, pause: 0.01, node: 1)
        }
        var kills = 0
        var logs = ""
        while Date().addingTimeInterval(4) < end {
            try await Task.sleep(for: .seconds(Double.random(in: 1...3)))
            let node = Int.random(in: 2...3)
            daemons[node]?.kill()
            logs += daemons[node]?.log ?? ""
            kills += 1
            try await Task.sleep(for: .milliseconds(300))
            daemons[node] = try harness.startDaemon(node: node)
        }
        let report: TokenReadReport
        do {
            report = try await reads
        } catch {
            for node in 1...3 { logs += daemons[node]?.log ?? "" }
            let problems = logs.split(separator: "\n").filter { $0.contains("error") || $0.contains("warning") }
            Issue.record("node 1's reader failed (\(error)); warnings and errors: \(problems.suffix(20))")
            for node in 1...3 { daemons[node]?.kill() }
            return
        }
        // Let the restarted nodes commit what their couriers spooled and everyone catch up.
        try await Task.sleep(for: .seconds(4))
        let listed = try harness.list()
        for node in 1...3 {
            #expect(daemons[node]?.terminate() == 0)
            logs += daemons[node]?.log ?? ""
        }

        try harness.checkNothingLost(listed: listed, count: Self.count)
        #expect(report.invalid.isEmpty, "expired or revoked tokens served: \(report.invalid.prefix(5))")
        #expect(report.unexpected.isEmpty, "\(report.unexpected.prefix(5))")
        #expect(report.served > 100, "node 1 served only \(report.served) tokens")
        // Every family was refreshed at the provider at least once over the run.
        let gaps = harness.longestGaps(to: end)
        #expect(gaps.count == Self.count, "only \(gaps.count) families were ever refreshed")
        #expect(ResilienceHarness.leakedTokens(in: logs).isEmpty, "tokens in the logs")
        // One write per transaction on PostgreSQL: no two nodes' groups lock credentials in
        // different orders (before, each deadlock stalled writes and reads behind them).
        #expect(!logs.contains("deadlock detected"), "transactions of two nodes deadlocked")
        print(
            "scale-out: \(kills) kills of nodes 2 and 3, \(harness.server.tokenRequestCount) refreshes, "
                + "node 1 served \(report.served) tokens, longest gap \(gaps.values.max() ?? 0) s")
    }
}
