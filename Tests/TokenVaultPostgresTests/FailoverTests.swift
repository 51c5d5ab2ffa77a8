import Foundation
import Testing
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// A failover to an asynchronous standby that lacks the primary's last commits, against the
/// punishing provider (rotation, reuse detection, no grace window). The tests make the standby
/// themselves (`pg_basebackup -R`), stream to it through a proxy they hold back so the last
/// refreshes never reach it, SIGKILL the primary, promote the standby, and point the nodes'
/// proxy at it, as a virtual IP moves. The nodes find the database on a new timeline, write back
/// the commits they keep, and only then present refresh tokens again.
@Suite(.serialized) struct FailoverTests {
    static let limits = #"{"concurrency": 16, "rate_per_second": 5000, "burst": 1000, "retry_base_seconds": 1}"#
    static let refresh = #"{"lifetime_share": 0.5, "margin_seconds": 1, "jitter": 0.3}"#
    static let count = 40

    struct Run {
        let harness: ResilienceHarness
        let listed: [[String: Any]]
        let logs: [String]
        /// `credential.reapply` audit rows in the promoted standby.
        let reapplyAudits: Int
        /// Refreshes the provider answered while the standby heard nothing.
        let unreplicated: Int
        /// `tokenvault status` on node 1 while the standby streamed.
        let status: String
        /// Holds the password file `verify` reads.
        let directory: TemporaryDirectory
    }

    /// Two nodes refresh 40 credentials for a while; the standby's stream is held for 5 s of
    /// refreshes; then the primary dies and the standby takes over. `retainSeconds` is
    /// `limits.retain_answers_seconds` (nil: the default).
    static func failover(retainSeconds: Int?, check: (Run) throws -> Void) async throws {
        let started = ContinuousClock.now
        func phase(_ what: String) { print("failover test, \(ContinuousClock.now - started): \(what)") }
        defer { phase("ending") }
        let primary = try await TestPostgres.dedicated()
        defer { primary.destroy() }
        let database = try await primary.makeDatabaseAsync()
        let stream = try PartitionProxy(to: primary.port)
        defer { stream.close() }
        let standby = try await primary.makeStandby(replicationPort: stream.port)
        defer { standby.destroy() }
        phase("standby made")
        let front = try PartitionProxy(to: primary.port)
        defer { front.close() }
        let directory = TemporaryDirectory("tokenvault-failover")
        let passwordFile = directory.file("pg-password")
        writeFile(passwordFile, Data(TestPostgres.password.utf8), permissions: 0o600)
        var storage = [
            "TOKENVAULT_STORAGE_URL": "postgres://postgres@127.0.0.1:\(front.port)/\(database)?sslmode=disable",
            "TOKENVAULT_STORAGE_PASSWORD_FILE": passwordFile,
        ]
        if let retainSeconds { storage["TOKENVAULT_RETAIN_ANSWERS_SECONDS"] = "\(retainSeconds)" }
        let harness = try await ResilienceHarness(
            lifetime: 10, limits: limits, refresh: refresh, answerDelay: 0.2...1.5, timeoutSeconds: nil,
            leaseSeconds: 20, postgres: (primary, database), nodes: 2, storage: storage)
        let daemons = [
            try harness.startDaemon(logLevel: "info", node: 1), try harness.startDaemon(logLevel: "info", node: 2),
        ]
        defer { for daemon in daemons { daemon.kill() } }
        phase("daemons started")
        try harness.seed(count)
        phase("seeded")
        // Every credential refreshed at least once on both servers.
        try await Task.sleep(for: .seconds(8))
        #expect(try await waitUntil(within: 20) { try Self.replicated(primary, standby, database) })
        phase("standby caught up")
        let status = try harness.cli.run(["status", "--socket", harness.socket(1)]).stdout
        let before = harness.server.successfulRefreshes
        stream.cut()
        try await Task.sleep(for: .seconds(5))
        let unreplicated = harness.server.successfulRefreshes - before
        try await primary.killAsync()
        // The stream ends without what it held back (its receiver would otherwise wait for its
        // timeout, a minute, before the promotion goes on).
        stream.close()
        let promoting = ContinuousClock.now
        try await standby.promoteAsync()
        phase("standby promoted in \(ContinuousClock.now - promoting)")
        front.retarget(to: standby.port)
        print("primary killed with \(unreplicated) refreshes unreplicated; standby promoted")
        // Two token lifetimes: every credential comes due again on the new primary.
        try await Task.sleep(for: .seconds(22))
        let listed = try harness.list()
        phase("listed")
        let logs = daemons.map(\.log)
        let audits =
            Int(
                try standby.psql(
                    "SELECT count(*) FROM audit_events WHERE operation = 'credential.reapply'", database: database)
            ) ?? -1
        try check(
            Run(
                harness: harness, listed: listed, logs: logs, reapplyAudits: audits, unreplicated: unreplicated,
                status: status, directory: directory))
        phase("checked")
    }

    /// Whether the standby has replayed everything the primary has written so far.
    static func replicated(_ primary: TestPostgres, _ standby: TestPostgres, _ database: String) throws -> Bool {
        let written = try primary.psql("SELECT pg_current_wal_lsn()")
        let replayed = try standby.psql("SELECT pg_last_wal_replay_lsn() >= '\(written)'::pg_lsn")
        return replayed == "t"
    }

    /// The commits the standby never got are written back by the nodes that kept them, each
    /// audited; no refresh token is presented twice and no family is revoked.
    @Test func aFailoverThatLosesCommitsLosesNoCredential() async throws {
        try await Self.failover(retainSeconds: nil) { run in
            let reapplied = run.logs.map { Self.reapplied(in: $0) }.reduce(0, +)
            for token in run.harness.server.refreshTokensPresentedTwice.prefix(2) {
                if let family = run.harness.server.familyID(of: token) {
                    print(run.harness.history(of: family, logs: run.logs.joined(separator: "\n")))
                }
            }
            try run.harness.checkNothingLost(listed: run.listed, count: Self.count)
            #expect(run.unreplicated > 0, "no refresh happened while the standby was held back")
            #expect(run.status.contains("replication:   WARNING: asynchronous, 1 standby, timeline 1"), "\(run.status)")
            #expect(reapplied > 0, "no node re-applied anything: \(run.unreplicated) refreshes were unreplicated")
            #expect(run.reapplyAudits == reapplied, "\(run.reapplyAudits) audit rows for \(reapplied) re-applied")
            #expect(run.logs.allSatisfy { $0.contains("lacked commits this node made") || Self.reapplied(in: $0) == 0 })
            #expect(ResilienceHarness.leakedTokens(in: run.logs.joined()).isEmpty, "tokens in the logs")
            print(
                "failover: \(run.unreplicated) refreshes unreplicated, \(reapplied) credentials re-applied, "
                    + "\(run.harness.server.successfulRefreshes) refreshes in all, none lost")
        }
    }

    /// The same failover with nothing kept (`limits.retain_answers_seconds` 0): the database comes
    /// back with refresh tokens the provider has spent, and presenting one revokes its family.
    /// What the kept commits guard.
    @Test func withoutKeptCommitsTheSameFailoverLosesFamilies() async throws {
        try await Self.failover(retainSeconds: 0) { run in
            let reauth = run.listed.filter { $0["status"] as? String == "needs_reauth" }
            #expect(run.unreplicated > 0)
            #expect(run.harness.server.revokedFamilies > 0, "no family lost without the kept commits")
            #expect(run.reapplyAudits == 0)
            print(
                "failover without kept commits: \(run.unreplicated) refreshes unreplicated, "
                    + "\(run.harness.server.revokedFamilies) families revoked, \(reauth.count) credentials need_reauth")
        }
    }

    /// The count in a node's "lacked commits" log line.
    static func reapplied(in log: String) -> Int {
        log.matches(of: /lacked commits this node made: (\d+) re-applied/).compactMap { Int($0.output.1) }.reduce(0, +)
    }
}
