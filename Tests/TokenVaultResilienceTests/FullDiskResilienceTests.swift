import Foundation
import Testing
import TokenVaultTesting

/// A disk with no space left under a SQLite vault (`NoSpaceInjector`), against the loopback
/// provider with rotation and reuse detection: the answers that arrive while nothing can be
/// written are held, tokens already stored are served, health says why, and once space returns
/// the held answers are committed without a restart; no refresh token is presented twice.
@Suite(.serialized) struct FullDiskResilienceTests {
    @Test func aFullDiskHoldsTheAnswersServesWhatIsStoredAndLosesNothing() async throws {
        let count = 20
        let harness = try await ResilienceHarness(
            lifetime: 40, limits: #"{"concurrency": 16, "rate_per_second": 5000, "burst": 1000}"#,
            // A refresh every 6 s or so, each answered 2-4 s after it was sent: calls are in
            // flight when the disk fills.
            refresh: #"{"lifetime_share": 0.15, "margin_seconds": 1, "jitter": 0.2}"#, answerDelay: 2...4,
            timeoutSeconds: 10)
        let disk = try NoSpaceInjector(directory: harness.dataDir, workDirectory: harness.directory.path)
        defer { disk.release() }
        let daemon = try harness.startDaemon(logLevel: "info", environment: disk.environment)
        defer { daemon.kill() }
        try harness.seed(count)
        try await Task.sleep(for: .seconds(8))
        #expect(try await waitUntil(within: 20) { harness.server.successfulRefreshes >= count })

        disk.fill()
        let filledAt = Date()
        let answeredBefore = harness.server.successfulRefreshes
        // Reads go on from what is stored (every token lives 40 s) while nothing can be written.
        let report = try await offThePool {
            try harness.readTokens(until: filledAt.addingTimeInterval(15), count: count, minimumTTL: 0, pause: 0.05)
        }
        #expect(report.served > 100 && report.invalid.isEmpty, "\(report.served) served, \(report.invalid.prefix(3))")
        // The provider issued tokens the vault could not write: they are held, and health says why.
        let answeredWhileFull = harness.server.successfulRefreshes - answeredBefore
        let health = try UnixSocketHTTP.request(harness.socket, "GET", "/v1/health").json()
        let database = try #require(health["database"] as? [String: Any])
        #expect(answeredWhileFull > 0, "no answer arrived while the disk was full")
        #expect(health["status"] as? String == "degraded", "\(health)")
        #expect((database["held_commits"] as? Int ?? 0) > 0, "\(health)")
        #expect((database["write_error"] as? String)?.contains("is full") == true, "\(health)")
        #expect(daemon.log.contains("is full"), "the log does not say the disk is full")

        disk.release()
        try await harness.checkHeldAnswersCommitted(by: daemon, count: count)
        print(
            "disk full for 15 s: \(report.served) tokens served, \(answeredWhileFull) answers held and committed "
                + "after space returned, none presented twice")
    }
}
