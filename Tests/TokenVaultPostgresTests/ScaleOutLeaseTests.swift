import Foundation
import Testing
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// Leases on a shared PostgreSQL vault, against the punishing provider (rotation,
/// reuse detection, no grace window): a node paused, a node cut off, the database stopped, a node
/// whose clock is minutes off (a slow provider: `SlowProviderResilienceTests`). A lease lasts
/// while its node's heartbeat goes on, and is taken over only after another node watched that
/// heartbeat stand still for a lease period.
@Suite(.serialized) struct ScaleOutLeaseTests {
    static let limits = #"{"concurrency": 16, "rate_per_second": 5000, "burst": 1000, "retry_base_seconds": 1}"#
    static let refresh = #"{"lifetime_share": 0.5, "margin_seconds": 1, "jitter": 0.3}"#

    /// Two nodes; node 2 is SIGSTOPped while it has refreshes in flight, for `pause` seconds, then
    /// continued. Returns the harness, the daemons and their logs.
    static func pauseNodeTwo(
        for pause: Double, leaseSeconds: Int?, count: Int = 60
    ) async throws -> (ResilienceHarness, [DaemonProcess]) {
        try await disturbNodeTwo(
            for: pause, leaseSeconds: leaseSeconds, count: count, postgres: try await TestPostgres.makeDatabase(),
            interrupt: { $0.process.signal(SIGSTOP) }, resume: { $0.process.signal(SIGCONT) })
    }

    /// Two nodes; `interrupt` is done to node 2 while it has refreshes in flight and `resume`
    /// `seconds` later, while node 1 serves tokens; then both go on for a few seconds.
    static func disturbNodeTwo(
        for seconds: Double, leaseSeconds: Int?, count: Int = 60, postgres: (TestPostgres, String),
        nodeTwoEnvironment: [String: String] = [:], interrupt: (DaemonProcess) -> Void,
        resume: (DaemonProcess) -> Void
    ) async throws -> (ResilienceHarness, [DaemonProcess]) {
        let harness = try await ResilienceHarness(
            lifetime: 30, limits: limits, refresh: refresh, answerDelay: 1...5, timeoutSeconds: nil,
            leaseSeconds: leaseSeconds, postgres: postgres, nodes: 2)
        let daemons = [
            try harness.startDaemon(logLevel: "info", node: 1),
            try harness.startDaemon(logLevel: "info", node: 2, environment: nodeTwoEnvironment),
        ]
        try harness.seed(count)
        // Until node 2 has journalled refreshes whose calls are out (answered meanwhile, and held).
        try await Task.sleep(for: .seconds(3))
        #expect(try await waitUntil(within: 20) { try harness.openAttempts(node: 2) >= 2 })
        interrupt(daemons[1])
        print("node 2 interrupted with \(try harness.openAttempts(node: 2)) refreshes journalled and out")
        let resumeAt = Date().addingTimeInterval(seconds)
        let reads = try await offThePool {
            harness.readTokensThroughRestarts(until: resumeAt, count: count, minimumTTL: 0, pause: 0.05, node: 1)
        }
        resume(daemons[1])
        #expect(reads.report.served > 100, "node 1 served only \(reads.report.served) tokens meanwhile")
        // Node 2 renews, commits what its courier holds, and both go on.
        try await Task.sleep(for: .seconds(6))
        return (harness, daemons)
    }

    /// Node 2 reaches PostgreSQL through a `PartitionProxy` (TCP, with a password, as across a
    /// network), which `interrupt` cuts and `resume` heals.
    static func cutNodeTwo(
        for seconds: Double, leaseSeconds: Int
    ) async throws -> (ResilienceHarness, [DaemonProcess], PartitionProxy) {
        let (server, database) = try await TestPostgres.makeDatabase()
        let proxy = try PartitionProxy(to: server.port)
        let directory = TemporaryDirectory("tokenvault-partition")
        let passwordFile = directory.file("pg-password")
        writeFile(passwordFile, Data(TestPostgres.password.utf8), permissions: 0o600)
        let (harness, daemons) = try await disturbNodeTwo(
            for: seconds, leaseSeconds: leaseSeconds, postgres: (server, database),
            nodeTwoEnvironment: [
                "TOKENVAULT_STORAGE_URL": "postgres://postgres@127.0.0.1:\(proxy.port)/\(database)?sslmode=disable",
                "TOKENVAULT_STORAGE_PASSWORD_FILE": passwordFile,
            ],
            interrupt: { _ in proxy.cut() }, resume: { _ in proxy.heal() })
        withExtendedLifetime(directory) {}
        return (harness, daemons, proxy)
    }

    static func inFlight(_ harness: ResilienceHarness, node: Int) -> Int {
        let metrics = (try? UnixSocketHTTP.request(harness.socket(node), "GET", "/metrics").text) ?? ""
        return metrics.split(separator: "\n").filter { $0.hasPrefix("tokenvault_provider_in_flight{") }
            .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0) { $0 + Int($1) }
    }

    static func metric(_ name: String, _ harness: ResilienceHarness, node: Int) -> Double? {
        let metrics = (try? UnixSocketHTTP.request(harness.socket(node), "GET", "/metrics").text) ?? ""
        return metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }
            .flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    /// Stopped for longer than a (short) lease period: node 1 takes node 2's attempts over, which
    /// a reuse-detecting provider answers by revoking the families whose refresh node 2 had sent.
    /// Node 2 reports every answer it could not store: error log, metric, `last_error`.
    @Test func aNodePausedForLongerThanTheLeaseReportsWhatItHeld() async throws {
        let (harness, daemons) = try await Self.pauseNodeTwo(for: 25, leaseSeconds: 12)
        let (tookOver, lost) = try Self.checkReported(harness, daemons)
        print(
            "paused 25 s with a 12 s lease: node 1 took over: \(tookOver), \(harness.server.revokedFamilies) "
                + "families revoked, \(lost) answers reported lost by node 2")
    }

    /// After node 2 was away for longer than the lease: every answer it could not store is
    /// reported (metric and log agree), and every family the provider revoked is a credential that
    /// shows why. Returns whether node 1 took anything over and how many answers node 2 reported.
    /// (Whether node 1 took anything over depends on what node 2 had journalled and sent at the
    /// moment it went away; these properties hold either way.)
    static func checkReported(
        _ harness: ResilienceHarness, _ daemons: [DaemonProcess]
    ) throws -> (tookOver: Bool, lost: Int) {
        let listed = try harness.list()
        let reported = Self.metric("tokenvault_answers_lost_to_takeover_total", harness, node: 2) ?? -1
        let logs = daemons.map(\.log)
        for daemon in daemons { daemon.kill() }
        let tookOver = logs[0].contains("taking over a refresh attempt")
        let lostLines = logs[1].split(separator: "\n").filter { $0.contains("another node took the refresh over") }
        #expect(Int(reported) == lostLines.count, "metric \(reported), log lines \(lostLines.count)")
        let reauth = listed.filter { $0["status"] as? String == "needs_reauth" }
        #expect(reauth.count == harness.server.revokedFamilies, "\(reauth.count) vs \(harness.server.revokedFamilies)")
        for credential in reauth {
            let error = credential["last_error"] as? [String: Any]
            #expect(error?["code"] as? String == "lease_taken_over", "\(credential)")
        }
        #expect(lostLines.count >= reauth.count)
        #expect(ResilienceHarness.leakedTokens(in: logs.joined()).isEmpty, "tokens in the logs")
        return (tookOver, lostLines.count)
    }

    /// Node 2 alone cut off from PostgreSQL (its connections silent, not closed) for most of the
    /// lease period while node 1 goes on: node 2 stops sending calls once its leases are a third of
    /// a period old, keeps the answers it received, and commits them when the network is back;
    /// node 1 watched node 2's counter stand still for less than a period and takes nothing over.
    @Test func aNodeCutOffForMostOfTheLeaseLosesNothing() async throws {
        let (harness, daemons, proxy) = try await Self.cutNodeTwo(for: 14, leaseSeconds: 20)
        defer { proxy.close() }
        // Long enough after the heal for node 2's held commits and a takeover, were one coming.
        try await Task.sleep(for: .seconds(6))
        let listed = try harness.list()
        let logs = daemons.map(\.log)
        for daemon in daemons { daemon.kill() }
        try harness.checkNothingLost(listed: listed, count: 60)
        #expect(!logs[0].contains("taking over a refresh attempt"), "node 1 took an attempt over")
        #expect(!logs[1].contains("another node took the refresh over"))
        #expect(ResilienceHarness.leakedTokens(in: logs.joined()).isEmpty, "tokens in the logs")
        print("node 2 cut off 14 s with a 20 s lease: \(harness.server.successfulRefreshes) refreshes, none lost")
    }

    /// Cut off for longer than the lease period: node 1 may take node 2's attempts over, and node
    /// 2 reports every answer it then cannot store (error log, metric, `last_error`), as for a
    /// node paused that long.
    @Test func aNodeCutOffForLongerThanTheLeaseReportsWhatItHeld() async throws {
        let (harness, daemons, proxy) = try await Self.cutNodeTwo(for: 25, leaseSeconds: 10)
        defer { proxy.close() }
        try await Task.sleep(for: .seconds(6))
        let (tookOver, lost) = try Self.checkReported(harness, daemons)
        print(
            "node 2 cut off 25 s with a 10 s lease: node 1 took over: \(tookOver), "
                + "\(harness.server.revokedFamilies) families revoked, \(lost) answers reported lost by node 2")
    }

    /// PostgreSQL stopped for longer than the lease period: every node's beats fail, so nobody
    /// watched anybody; when it is back the owners renew and commit what they hold, and no attempt
    /// is taken over.
    @Test func postgresStoppedForLongerThanTheLeaseLosesNothing() async throws {
        let server = try await TestPostgres.dedicated()
        defer { server.destroy() }
        let database = try await server.makeDatabaseAsync()
        let count = 60
        let harness = try await ResilienceHarness(
            lifetime: 30, limits: Self.limits, refresh: Self.refresh, answerDelay: 0.3...2, timeoutSeconds: nil,
            leaseSeconds: 8, postgres: (server, database), nodes: 2)
        let daemons = [try harness.startDaemon(node: 1), try harness.startDaemon(node: 2)]
        defer { for daemon in daemons { daemon.kill() } }
        try harness.seed(count)
        try await Task.sleep(for: .seconds(8))
        try await server.stopAsync()
        try await Task.sleep(for: .seconds(15))
        try await server.startAsync()
        // Long enough for a takeover to happen if silence were misjudged (two lease periods).
        try await Task.sleep(for: .seconds(16))
        let listed = try harness.list()
        let logs = daemons.map(\.log).joined()
        try harness.checkNothingLost(listed: listed, count: count)
        #expect(!logs.contains("taking over a refresh attempt"), "an attempt was taken over after the outage")
        #expect(!logs.contains("another node took the refresh over"))
        print(
            "database stopped 15 s with an 8 s lease: \(harness.server.successfulRefreshes) refreshes, "
                + "\(logs.components(separatedBy: "held tokens committed").count - 1) held answers committed")
    }

    /// A node whose clock is ten minutes ahead (faketime) joins while the other node has refreshes
    /// in flight: on its clock every attempt node 1 journalled is long past its recorded lease end.
    /// Leases are judged by heartbeats on the database's clock, so it takes none over. (Judged by
    /// their recorded ends, each would look expired to it, and it would present the same refresh
    /// token again.) Its heartbeat measures the offset, far beyond `limits.max_clock_offset_seconds`:
    /// it serves nothing and refreshes nothing, says why, and node 1 goes on.
    @Test func aNodeWithItsClockMinutesAheadTakesNothingOverAndRefuses() async throws {
        let (server, database) = try await TestPostgres.makeDatabase()
        let count = 40
        let harness = try await ResilienceHarness(
            lifetime: 6, limits: Self.limits, refresh: #"{"lifetime_share": 0.5, "margin_seconds": 1, "jitter": 0.2}"#,
            answerDelay: 1...3, timeoutSeconds: nil, postgres: (server, database), nodes: 2)
        let first = try harness.startDaemon(node: 1)
        defer { first.kill() }
        try harness.seed(count)
        // Node 1 refreshing every credential every few seconds, many of them in flight.
        try await Task.sleep(for: .seconds(5))
        #expect(try await waitUntil(within: 10) { Self.inFlight(harness, node: 1) >= 5 })
        let before = harness.server.successfulRefreshes
        let skewed = try Self.startSkewed(harness, by: "+10m")
        defer { skewed.stop() }
        try await Task.sleep(for: .seconds(12))
        let logs = first.log + skewed.daemon.log
        #expect(harness.server.revokedFamilies == 0, "\(harness.server.revokedFamilies) token families revoked")
        let presentedTwice = harness.server.refreshTokensPresentedTwice.count
        #expect(presentedTwice == 0, "\(presentedTwice) refresh tokens presented twice")
        #expect(!logs.contains("taking over a refresh attempt"), "an attempt was taken over")
        #expect(harness.server.successfulRefreshes > before + count / 2, "refreshes stopped")
        // Node 2 refuses, and says why: in its answers, its log, its metrics and `tokenvault nodes`.
        let read = try UnixSocketHTTP.request(
            harness.socket(2), "GET", "/v1/credentials/\(ResilienceHarness.name(0))/token")
        #expect(read.status == 503 && read.json()["code"] as? String == "clock_skew", "\(read.text)")
        #expect((read.json()["detail"] as? String)?.contains("ahead of the database's") == true, "\(read.text)")
        #expect(skewed.daemon.log.contains("this node's clock is"), "the refusal was not logged")
        let metrics = try UnixSocketHTTP.request(harness.socket(2), "GET", "/metrics").text
        #expect(metrics.contains("\ntokenvault_clock_skew_refusing 1"), "\(metrics.prefix(200))")
        #expect(metrics.contains("\ntokenvault_clock_offset_seconds -"), "\(metrics.prefix(200))")
        // The outbox is counted on PostgreSQL too (NaN when the read fails).
        #expect(metrics.contains("\ntokenvault_webhook_outbox{state=\"pending\"} 0"), "\(metrics.prefix(400))")
        let offset = try await Self.reportedOffset(harness, node: 2)
        #expect(offset.map { abs($0 + 600) < 5 } == true, "node 2 reported \(String(describing: offset))")
        print(
            "clock ten minutes ahead on node 2: \(harness.server.successfulRefreshes - before) refreshes by node 1 "
                + "after it joined, none presented twice; node 2 measured \(offset ?? .nan) s and refused")
    }

    /// A node whose clock is 4 s behind (within the bound) judges expiry on the database's clock:
    /// a token that the database's clock has expired is not served, though the node's own clock
    /// says 4 s are left (before the correction it was served for those 4 s).
    @Test func aNodeWhoseClockIsBehindServesNothingTheDatabasesClockHasExpired() async throws {
        let (server, database) = try await TestPostgres.makeDatabase()
        let harness = try await ResilienceHarness(
            lifetime: 600, limits: Self.limits, refresh: Self.refresh, timeoutSeconds: nil,
            postgres: (server, database), nodes: 2)
        let first = try harness.startDaemon(node: 1)
        defer { first.kill() }
        let skewed = try Self.startSkewed(harness, by: "-4")
        defer { skewed.stop() }
        // Measured (the next beat reports it) before anything is read.
        let offset = try await Self.reportedOffset(harness, node: 2)
        #expect(offset.map { abs($0 - 4) < 1 } == true, "node 2 reported \(String(describing: offset))")
        // No refresh token: nothing renews it; it expires 3 s from now by the real clock.
        let expiresAt = Date().timeIntervalSince1970 + 3
        let body =
            #"{"provider": "idp", "token": {"access_token": "at-fixed", "token_type": "Bearer", "expires_at": "#
            + "\(expiresAt)}}"
        let put = try UnixSocketHTTP.request(harness.socket(1), "PUT", "/v1/credentials/skew/fixed", body: body)
        #expect(put.status == 201, "\(put.text)")
        let fresh = try UnixSocketHTTP.request(harness.socket(2), "GET", "/v1/credentials/skew/fixed/token")
        #expect(fresh.status == 200, "\(fresh.text)")
        try await Task.sleep(for: .seconds(max(0, expiresAt + 0.5 - Date().timeIntervalSince1970)))
        let stale = try UnixSocketHTTP.request(harness.socket(2), "GET", "/v1/credentials/skew/fixed/token")
        #expect(stale.status == 409 && stale.json()["code"] as? String == "token_expired", "\(stale.text)")
    }

    /// Node 2 under faketime (Debian's, installed by scripts/install-deps.sh --test), which moves
    /// the wall clock by a constant. Only the wall clock, as a host's clock that is off: with the
    /// monotonic clock moved too, a node 4 s behind slept through its heartbeats.
    static func startSkewed(_ harness: ResilienceHarness, by offset: String) throws -> SkewedNode {
        let daemon = try harness.startDaemon(
            node: 2, launcher: ["/usr/bin/faketime", "-f", offset], environment: ["FAKETIME_DONT_FAKE_MONOTONIC": "1"])
        // faketime runs the daemon as its child: the daemon's own pid is in its lock file.
        let lock = try String(contentsOfFile: harness.dataDir(2) + "/vault.db.lock", encoding: .utf8)
        let pid = lock.split(separator: "\n").first { $0.hasPrefix("pid=") }.flatMap { Int32($0.dropFirst(4)) }
        #expect(pid != nil, "no pid in the lock file: \(lock)")
        return SkewedNode(daemon: daemon, pid: pid)
    }

    struct SkewedNode {
        let daemon: DaemonProcess
        let pid: Int32?

        func stop() {
            if let pid { Glibc.kill(pid, SIGKILL) }
            daemon.kill()
        }
    }

    /// The clock offset `tokenvault nodes --json` shows for `node`, once its beats report one.
    static func reportedOffset(_ harness: ResilienceHarness, node: Int) async throws -> Double? {
        var offset: Double?
        var last = ""
        _ = try await waitUntil(within: 30) {
            let listed = try? harness.cli.run(
                ["nodes", "--json", "--data-dir", harness.dataDir(node), "--config", harness.configPath],
                environment: harness.storageEnvironment)
            let nodes =
                (try? JSONSerialization.jsonObject(with: Data((listed?.stdout ?? "").utf8))) as? [[String: Any]] ?? []
            offset = (nodes.first { $0["this"] as? Bool == true }?["clock_offset_seconds"] as? NSNumber)?.doubleValue
            if offset == nil { last = (listed?.stdout ?? "") + (listed?.stderr ?? "") }
            return offset != nil
        }
        if offset == nil { print("tokenvault nodes said: \(last)") }
        return offset
    }
}

/// The longest of the lease tests, in a suite of its own so that it runs beside the others (its
/// paused node takes no CPU for two minutes) instead of after them: the PostgreSQL phase of
/// `make test` was as long as the lease suite, 356 s, this test 140 s of it.
@Suite(.serialized) struct ScaleOutLongPauseTests {
    /// Stopped for longer than the old wall-clock lease (120 s), with the default lease period:
    /// nobody takes node 2's attempts over, and what its courier received meanwhile is committed.
    @Test func aNodePausedForLongerThanTheOldLeaseLosesNothing() async throws {
        let (harness, daemons) = try await ScaleOutLeaseTests.pauseNodeTwo(for: 125, leaseSeconds: nil)
        let listed = try harness.list()
        let logs = daemons.map(\.log).joined()
        for daemon in daemons { daemon.kill() }
        try harness.checkNothingLost(listed: listed, count: 60)
        #expect(!logs.contains("taking over a refresh attempt"), "an attempt was taken over")
        #expect(ResilienceHarness.leakedTokens(in: logs).isEmpty, "tokens in the logs")
        print("paused 125 s: \(harness.server.successfulRefreshes) refreshes, none lost")
    }
}
