import Foundation
import Testing
import TokenVaultTesting

/// The CLI's refresh-engine commands against the built daemon and the loopback provider:
/// `watch` follows refreshes until the credential is deleted, `rm` revokes at the provider,
/// `refresh` is rate limited, and health reports the provider.
@Suite struct RefreshCLITests {
    @Test func watchFollowsRefreshesAndRmRevokes() async throws {
        let harness = try await ResilienceHarness(
            lifetime: 2, limits: #"{"concurrency": 4}"#, refresh: #"{"lifetime_share": 0.5, "margin_seconds": 1}"#)
        let daemon = try harness.startDaemon(logLevel: "trace")
        defer { daemon.terminate() }
        try harness.seed(1)

        let outputPath = harness.directory.file("watch.out")
        let watch = try SpawnedProcess(
            executable: harness.cli.executable,
            arguments: ["watch", ResilienceHarness.name(0), "--socket", harness.socket],
            environment: harness.cli.environment, stdout: outputPath)
        // Lifetime 2 s, refreshed at half-life: the state when the watch began (generation 1, or a
        // later one if the CLI was slow to start) and two refreshes within about 3 s.
        func generations() -> [Int] {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { line in
                line.firstMatch(of: /generation (\d+)/).flatMap { Int($0.1) }
            }
        }
        #expect(try await waitUntil(within: 15) { Set(generations()).count >= 3 }, "\(generations())")
        let removed = try harness.cli.run(["rm", ResilienceHarness.name(0), "--socket", harness.socket])
        #expect(removed.status == 0, "\(removed.stderr)")
        let ended = await waitForExit(watch, seconds: 5)
        #expect(ended, "watch did not end when the credential was deleted")
        if !ended { watch.terminate() }
        watch.waitUntilExit()
        let lines = ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "").split(separator: "\n")
        #expect(lines.count >= 3, "expected the state and at least two refreshes: \(lines)")
        let seen = generations()
        #expect(seen == seen.sorted() && Set(seen).count >= 3, "\(lines)")
        #expect(!lines.joined().contains("rt-"), "a refresh token reached the watch output")
        // Revoked at the provider: refresh token, then access token.
        #expect(harness.server.revocationRequestCount == 2)
        let hints = harness.server.requests.filter { $0.path == "/revoke" }.compactMap { $0.form["token_type_hint"] }
        #expect(hints == ["refresh_token", "access_token"])
        daemon.terminate()
        #expect(!daemon.log.isEmpty)
        #expect(ResilienceHarness.leakedTokens(in: daemon.log).isEmpty, "tokens in a trace-level daemon log")
    }

    @Test func forcedRefreshIsRateLimitedAndHealthNamesTheProvider() async throws {
        let harness = try await ResilienceHarness(
            lifetime: 3600, limits: #"{"concurrency": 4}"#, refresh: #"{"lifetime_share": 0.75}"#)
        let daemon = try harness.startDaemon()
        defer { daemon.terminate() }
        try harness.seed(1)
        let refresh = try harness.cli.run(["refresh", ResilienceHarness.name(0), "--socket", harness.socket])
        #expect(refresh.status != 0)
        #expect(refresh.stderr.contains("force a refresh again in"), "\(refresh.stderr)")
        let health = try UnixSocketHTTP.request(harness.socket, "GET", "/v1/health").json()
        let providers = health["providers"] as? [[String: Any]] ?? []
        #expect(providers.contains { $0["name"] as? String == "idp" && $0["condition"] as? String == "ok" })
        // Three reads of one credential: a row is kept from its second read at the latest, so the
        // third comes from the daemon's cache.
        for _ in 0..<3 {
            #expect(
                try UnixSocketHTTP.request(
                    harness.socket, "GET", "/v1/credentials/\(ResilienceHarness.name(0))/token"
                ).status == 200)
        }
        let metrics = try UnixSocketHTTP.request(harness.socket, "GET", "/metrics").text
        #expect(metrics.contains("tokenvault_provider_condition{provider=\"idp\",condition=\"ok\"} 1"), "\(metrics)")
        let hits = metrics.split(separator: "\n").first { $0.hasPrefix("tokenvault_row_cache_hits_total ") }
        #expect(hits.flatMap { Double($0.split(separator: " ")[1]) }.map { $0 >= 1 } == true, "\(metrics)")
        #expect(metrics.contains("\ntokenvault_row_cache_rows "))
    }

    private func waitForExit(_ process: SpawnedProcess, seconds: Double) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        return !process.isRunning
    }
}
