import Foundation
import Testing
import TokenVaultTesting

/// A provider that does the refresh at once but answers half a minute later (with a 10 s read
/// timeout, one late answer in ten would cost 140 of 200 credentials within 90 s).
/// With the default read timeout every answer is waited for: nothing is presented twice, no
/// family is revoked. Some reads meanwhile find the access token expired and say so.
@Suite(.serialized) struct SlowProviderResilienceTests {
    static let count = 40
    static let lifetime = 20.0

    /// The run both backends share: `count` credentials, a quarter of the refreshes answered 30 s
    /// late, readers on every node for 45 s.
    static func run(
        postgres: (server: TestPostgres, database: String)? = nil, nodes: Int = 1
    ) async throws {
        let harness = try await ResilienceHarness(
            lifetime: lifetime,
            limits: #"{"concurrency": 32, "rate_per_second": 5000, "burst": 1000, "retry_base_seconds": 1}"#,
            refresh: #"{"lifetime_share": 0.5, "margin_seconds": 1, "jitter": 0.2}"#, lateAnswers: (0.25, 30),
            timeoutSeconds: nil, postgres: postgres, nodes: nodes)
        var daemons = [try harness.startDaemon(node: 1)]
        defer { for daemon in daemons { daemon.kill() } }
        try harness.seed(count)
        for node in stride(from: 2, through: nodes, by: 1) { daemons.append(try harness.startDaemon(node: node)) }
        let end = Date().addingTimeInterval(45)
        let reports = try await withThrowingTaskGroup(of: TokenReadReport.self) { group in
            for node in 1...nodes {
                group.addTask {
                    try await offThePool {
                        try harness.readTokens(until: end, count: count, minimumTTL: 0, pause: 0.05, node: node)
                    }
                }
            }
            return try await group.reduce(into: [TokenReadReport]()) { $0.append($1) }
        }
        let listed = try harness.list()
        let logs = daemons.map(\.log).joined()
        let late = harness.server.requests.filter { $0.path.hasSuffix("/token") }.count
        // Nothing lost: every family alive, no refresh token presented twice, every credential
        // there and active (a refresh still waiting for its late answer is in flight, not failed).
        #expect(harness.server.revokedFamilies == 0, "\(harness.server.revokedFamilies) token families revoked")
        let presentedTwice = harness.server.refreshTokensPresentedTwice.count
        #expect(presentedTwice == 0, "\(presentedTwice) refresh tokens presented twice")
        #expect(listed.count == count)
        let notActive = listed.filter { $0["status"] as? String != "active" }
        #expect(notActive.count == 0, "not active: \(notActive.prefix(3))")
        for report in reports {
            #expect(report.invalid.isEmpty, "expired or revoked tokens served: \(report.invalid.prefix(3))")
            #expect(report.unexpected.isEmpty, "\(report.unexpected.prefix(3))")
            #expect(report.served > 100, "only \(report.served) tokens served")
        }
        #expect(!logs.contains("read timeout"), "a provider call was given up on")
        #expect(ResilienceHarness.leakedTokens(in: logs).isEmpty, "tokens in the logs")
        print(
            "slow provider (\(postgres == nil ? "SQLite" : "PostgreSQL, \(nodes) nodes")): \(late) token requests, "
                + "\(harness.server.successfulRefreshes) refreshes, served \(reports.map(\.served)), "
                + "refused \(reports.map(\.refused))")
    }

    @Test func aProviderAnsweringAfterThirtySecondsLosesNothingOnSQLite() async throws {
        try await Self.run()
    }

    /// Two nodes on one PostgreSQL vault. (In this suite, not `ScaleOutLeaseTests`: the two suites
    /// run side by side in `make test`'s PostgreSQL phase.)
    @Test func aProviderAnsweringAfterThirtySecondsLosesNothingOnPostgreSQL() async throws {
        try await Self.run(postgres: try await TestPostgres.makeDatabase(), nodes: 2)
    }
}
