import Foundation
import Testing
import TokenVaultTesting

/// The refresh engine's promises, checked against the built daemon and the loopback provider
/// with rotation and reuse detection: a soak, crashes at random moments, and an outage.
/// Serialized: each test loads both cores on its own.
@Suite(.serialized) struct ResilienceTests {
    /// 500 credentials with 3-second lifetimes for 60 s, 8 clients reading `min_ttl=2` in a
    /// loop: no refresh token presented twice, no expired (or too short) token served, every
    /// credential refreshed before it expired.
    @Test func soak() async throws {
        let harness = try await ResilienceHarness(
            lifetime: 3, limits: #"{"concurrency": 32, "rate_per_second": 5000, "burst": 1000}"#,
            refresh: #"{"lifetime_share": 0.5, "margin_seconds": 1, "jitter": 0.1}"#,
            // Time runs a hundred times fast here: a read may refresh a credential once a second
            // (the default 10 s is for lifetimes of minutes).
            sections: #""limits": {"on_demand_refresh_seconds": 1}"#)
        let daemon = try harness.startDaemon()
        try harness.seed(500)
        let deadline = Date().addingTimeInterval(60)
        let report = try await withThrowingTaskGroup(of: TokenReadReport.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await offThePool {
                        // 20 ms between reads: ~50 reads/s per task, so the readers do not
                        // take the CPU the debug-build daemon needs on a 2-core machine.
                        try harness.readTokens(until: deadline, count: 500, minimumTTL: 2, pause: 0.02)
                    }
                }
            }
            return try await group.reduce(into: TokenReadReport()) { $0.add($1) }
        }
        let end = Date()
        let listed = try harness.list()
        #expect(daemon.terminate() == 0)
        #expect(ResilienceHarness.leakedTokens(in: daemon.log).isEmpty, "tokens in the daemon log")

        #expect(harness.server.refreshTokensPresentedTwice.isEmpty, "a refresh token was presented twice")
        #expect(harness.server.revokedFamilies == 0)
        #expect(report.invalid.isEmpty, "expired or revoked tokens served: \(report.invalid.prefix(5))")
        #expect(report.tooShort == 0, "tokens served with less than min_ttl left")
        #expect(report.unexpected.isEmpty, "\(report.unexpected.prefix(5))")
        #expect(report.refreshTokenLeaks == 0)
        // Readers served throughout, not starved (a stalled daemon serves a small fraction of
        // this). How many a machine serves is a benchmark's business: this one served 4,900 to
        // 12,900 in a minute on two cores (a floor of 10,000, then of 5,000, failed on slow
        // runs), so the floor only rules out starvation.
        #expect(report.served > 2_500, "only \(report.served) tokens served")
        let refused = report.refused.values.reduce(0, +)
        #expect(refused * 100 < report.served, "too many refusals: \(report.refused) \(report.refusalDetails)")
        let gaps = harness.longestGaps(to: end)
        #expect(gaps.count == 500, "only \(gaps.count) families were ever refreshed")
        let late = gaps.filter { $0.value >= harness.lifetime }
        let failures = daemon.log.split(separator: "\n").filter { $0.contains("refresh failed") }
        let lateSummary =
            "\(late.count) credentials went unrefreshed past their lifetime: \(late.values.max() ?? 0) s; "
            + "\(failures.count) failed refreshes in the log, e.g. \(failures.prefix(3))"
        #expect(late.isEmpty, "\(lateSummary)")
        #expect(listed.count == 500)
        #expect(listed.allSatisfy { $0["status"] as? String == "active" })
        print(
            "soak: \(report.served) tokens served, \(harness.server.successfulRefreshes) refreshes, "
                + "refused \(report.refused), longest gap \(gaps.values.max() ?? 0) s, \(failures.count) failed refreshes"
        )
    }

    /// Twenty SIGKILLs at random moments of a soak. The provider keeps a rotated token usable
    /// for 30 s (a grace window), so a refresh whose answer died with the daemon is recovered
    /// on restart: in the end every credential is there, active, and `verify` is clean.
    @Test func crashesWithAGraceWindowLoseNothing() async throws {
        let harness = try await crashRun(graceWindow: 30)
        for credential in harness.listed {
            #expect(credential["status"] as? String == "active", "\(credential["id"] ?? "?"): \(credential)")
        }
        #expect(harness.server.revokedFamilies == 0)
    }

    /// The same without a grace window: a refresh whose answer died with the daemon was
    /// rotated at the provider, so the retry with the old token revokes that family. Exactly
    /// those credentials end `needs_reauth`, with the reason; none is lost or silently broken.
    @Test func crashesWithoutAGraceWindowEndInVisibleReauthOnly() async throws {
        let harness = try await crashRun(graceWindow: 0)
        let needsReauth = harness.listed.filter { $0["status"] as? String == "needs_reauth" }
        #expect(needsReauth.count == harness.server.revokedFamilies)
        for credential in needsReauth {
            let message = (credential["last_error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.contains("answer was lost"), "\(credential["id"] ?? "?"): \(message)")
        }
        let others = harness.listed.filter { $0["status"] as? String != "needs_reauth" }
        #expect(others.allSatisfy { $0["status"] as? String == "active" })
        print("crash without grace: \(needsReauth.count) of \(harness.listed.count) need re-authorisation")
    }

    struct CrashResult {
        let server: TestOAuthServer
        let listed: [[String: Any]]
    }

    private func crashRun(graceWindow: Double) async throws -> CrashResult {
        let count = 500
        let harness = try await ResilienceHarness(
            lifetime: 3, graceWindow: graceWindow,
            limits: #"{"concurrency": 32, "rate_per_second": 5000, "burst": 1000}"#,
            refresh: #"{"lifetime_share": 0.5, "margin_seconds": 1, "jitter": 0.1}"#)
        var daemon = try harness.startDaemon()
        try harness.seed(count)
        var served = TokenReadReport()
        for _ in 0..<20 {
            let lifetime = Double.random(in: 0.3...1.5)
            let deadline = Date().addingTimeInterval(lifetime)
            served.add(
                try await offThePool { try harness.readTokens(until: deadline, count: count, minimumTTL: 1) })
            daemon.kill()
            #expect(ResilienceHarness.leakedTokens(in: daemon.log).isEmpty, "tokens in the daemon log")
            daemon = try harness.startDaemon()
        }
        // Let it catch up, then look.
        try await Task.sleep(for: .seconds(4))
        let listed = try harness.list()
        #expect(daemon.terminate() == 0)
        let verify = try harness.verify()
        #expect(verify.status == 0, "verify: \(verify.stdout) \(verify.stderr)")
        #expect(listed.count == count, "credentials lost: \(count - listed.count)")
        // A token is never served expired. One read can race the recovery of its own
        // credential: served an instant before the provider, seeing the old refresh token again,
        // revoked the family. Such a credential ends needs_reauth; any other revoked token is a bug.
        let reauth = Set(listed.filter { $0["status"] as? String == "needs_reauth" }.compactMap { $0["id"] as? String })
        let unexplained = served.invalid.filter { entry in
            let parts = entry.components(separatedBy: ": ")
            return !(parts.count == 2 && parts[1] == "revoked" && reauth.contains(parts[0]))
        }
        #expect(unexplained.isEmpty, "expired or revoked tokens served: \(unexplained.prefix(5))")
        #expect(served.unexpected.isEmpty, "\(served.unexpected.prefix(5))")
        return CrashResult(server: harness.server, listed: listed)
    }

    /// The provider is down for 30 s: valid tokens keep being served until they expire, then
    /// reads get a clear error naming the failure; when it is back, credentials recover without
    /// a burst above the configured rate (5/s, burst 5).
    @Test func outageThenRecoveryWithinTheRateLimit() async throws {
        let count = 40
        // 40 credentials refreshed every ~10 s need 4 refreshes/s: within the 5/s limit.
        let harness = try await ResilienceHarness(
            lifetime: 20,
            limits:
                #"{"concurrency": 4, "rate_per_second": 5, "burst": 5, "breaker_failures": 3, "breaker_cooldown_seconds": 2, "retry_cap_seconds": 2}"#,
            refresh: #"{"lifetime_share": 0.5, "margin_seconds": 1, "jitter": 0.1}"#)
        let daemon = try harness.startDaemon()
        try harness.seed(count)
        try await Task.sleep(for: .seconds(2))

        await harness.server.goOffline()
        let outageEnd = Date().addingTimeInterval(30)
        let during = try await offThePool {
            try harness.readTokens(until: outageEnd, count: count, minimumTTL: 0, pause: 0.05)
        }
        #expect(during.invalid.isEmpty, "expired tokens served during the outage: \(during.invalid.prefix(5))")
        #expect(during.served > 0, "valid tokens were not served at the start of the outage")
        #expect((during.refused["token_expired"] ?? 0) > 0, "no clear error once tokens expired: \(during.refused)")
        #expect(
            during.refusalDetails.allSatisfy { $0.contains("connection_failed") || $0.contains("paused") },
            "errors do not say why: \(during.refusalDetails)")

        let back = Date()
        try await harness.server.comeBack()
        var recovered = false
        for _ in 0..<100 {
            try await Task.sleep(for: .milliseconds(200))
            let listed = try harness.list()
            if listed.count == count, listed.allSatisfy({ $0["status"] as? String == "active" }) {
                // RFC 3339 UTC with milliseconds sorts as text.
                let soon = ISO8601DateFormatter.withFractions.string(from: Date().addingTimeInterval(1))
                recovered = listed.allSatisfy { ($0["expires_at"] as? String ?? "") > soon }
                if recovered { break }
            }
        }
        let stuck = try harness.list().filter { $0["status"] as? String != "active" }.prefix(3)
        #expect(recovered, "credentials did not recover within 20 s of the provider's return: \(stuck)")
        #expect(daemon.terminate() == 0)

        let arrivals = harness.server.requests.filter { $0.path.hasSuffix("/token") && $0.receivedAt >= back }
            .map(\.receivedAt)
        var worst = 0
        for (index, at) in arrivals.enumerated() {
            worst = max(worst, arrivals[index...].prefix { $0.timeIntervalSince(at) < 1 }.count)
        }
        // At most 10 by the daemon's clock (rate 5/s + burst 5); timed at the provider, a stall of
        // its event loop can bunch them, hence 12: forty at once without the limit.
        #expect(worst <= 12, "\(worst) refreshes within one second after the outage (rate 5/s + burst 5)")
        print("outage: served \(during.served), refused \(during.refused); after: worst 1-s burst \(worst)")
    }
}

extension ISO8601DateFormatter {
    static var withFractions: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}
