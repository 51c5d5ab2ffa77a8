import Foundation
import TokenVaultTesting

/// Durable refreshes per second with 1, 2, 3… daemons on one PostgreSQL vault: per
/// trial, a fresh database, `tokenvault init` on it, N credentials seeded through node 1 with
/// tokens of the loopback test provider (rotating, reuse-detecting, no grace window), every node
/// started with the provider configured, then the nodes' `tokenvault_refreshes_total{outcome=
/// "succeeded"}` summed over S seconds after a warm-up: each counted refresh has been committed.
struct NodesBench {
    var binary: String
    var directory: String
    /// One database per trial, in trial order (the script creates them).
    var storageURLs: [String]
    var nodeCounts: [Int]
    var count = 1000
    var seconds = 20.0
    var warmup = 5.0
    var lifetime = 2.0
    var concurrency = 64
    /// Seconds the provider takes to answer each refresh (0: at once). With a delay, a node's
    /// throughput is bounded by its instance's `limits.concurrency` over the delay, as against a
    /// remote provider, and more nodes add capacity until the database or the machine is the limit.
    var answerDelay = 0.0
    /// The instance's `keep_alive_seconds` (nil: its default; 0: a connection per call).
    var keepAliveSeconds: Double?

    /// Refresh at the smallest share of a token's lifetime the configuration takes: with the
    /// provider's short tokens every credential is due again as soon as its refresh commits.
    static let share = 0.05
    /// Lifetime of the seeded tokens: due after `seedLifetime * share` = 9 s.
    static let seedLifetime = 180.0

    struct Trial {
        var nodes: Int
        var refreshes: Int
        var perSecond: Double
        var daemonCPU: Double
        /// The daemons' threads put to sleep and woken again (voluntary context switches, summed
        /// over their threads): each hand-off of work from one thread to another costs one.
        var daemonWakeUps: Int
        /// Busy cores of the whole machine (daemons, couriers, PostgreSQL, this process's provider).
        var machineCores: Double
        var presentedTwice: Int
        var revoked: Int
    }

    func run() async throws {
        print(Machine.describe())
        var options = TestOAuthServer.Options()
        options.accessTokenLifetime = lifetime
        options.graceWindow = 0
        if answerDelay > 0 { options.tokenAnswerDelay = answerDelay...answerDelay }
        let server = try await TestOAuthServer.start(options)
        var trials: [Trial] = []
        for (index, nodes) in nodeCounts.enumerated() {
            progress("trial \(index + 1): \(nodes) node(s), \(count) credentials, \(format(seconds)) s")
            trials.append(try trial(nodes: nodes, url: storageURLs[index], server: server, index: index))
        }
        print(
            """

            Loopback provider: access tokens of \(format(lifetime)) s, refresh tokens rotated and reuse-detected, no grace window, \
            each refresh answered after \(format(answerDelay, 3)) s; \
            each node's instance limits.concurrency \(concurrency); \(count) credentials, all refreshed continuously \
            (refreshed at \(Self.share) of the lifetime: due again at once); \(format(warmup)) s warm-up, then \(format(seconds)) s counted.

            Daemon: \(binary)

            | nodes | durable refreshes | refreshes/s | vs 1 node | daemons' CPU (cores) | daemons' CPU ms per refresh | daemons' thread wake-ups per refresh | machine busy (cores) | refresh tokens presented twice | families revoked |
            | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
            """)
        let base = trials.first?.perSecond ?? 1
        for trial in trials {
            print(
                "| \(trial.nodes) | \(grouped(trial.refreshes)) | \(format(trial.perSecond)) | "
                    + "\(format(trial.perSecond / base, 2))x | \(format(trial.daemonCPU / seconds, 2)) | "
                    + "\(format(trial.daemonCPU * 1000 / Double(max(1, trial.refreshes)), 2)) | "
                    + "\(format(Double(trial.daemonWakeUps) / Double(max(1, trial.refreshes)), 1)) | "
                    + "\(format(trial.machineCores, 2)) of \(ProcessInfo.processInfo.activeProcessorCount) | "
                    + "\(trial.presentedTwice) | \(trial.revoked) |")
        }
    }

    private func trial(nodes: Int, url: String, server: TestOAuthServer, index: Int) throws -> Trial {
        let root = directory + "/trial\(index + 1)"
        try FileManager.default.createDirectory(
            atPath: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let environment = ["TOKENVAULT_STORAGE_URL": url]
        func dataDir(_ node: Int) -> String { root + "/node\(node)" }
        func socket(_ node: Int) -> String { root + "/node\(node).sock" }
        _ = try runProgram("/usr/bin/env", ["TOKENVAULT_STORAGE_URL=" + url, binary, "init", "--data-dir", dataDir(1)])
        let key = try Data(contentsOf: URL(fileURLWithPath: dataDir(1) + "/master.key"))
        for node in 1...nodes where node > 1 {
            try FileManager.default.createDirectory(
                atPath: dataDir(node), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            writeFile(dataDir(node) + "/master.key", key, permissions: 0o600)
        }
        let secretFile = root + "/client.secret"
        writeFile(secretFile, Data("vault-secret".utf8), permissions: 0o600)
        let config = root + "/config.json"
        let limits = #"{"concurrency": \#(concurrency), "rate_per_second": 100000, "burst": 100000}"#
        try Data(
            """
            {"providers": {"idp": {"kind": "oauth2", "token_endpoint": "\(server.tokenURL)", "client_id": "vault-client",
             "client_secret_file": "\(secretFile)",\(keepAliveSeconds.map { #" "keep_alive_seconds": \#($0),"# } ?? "") "refresh": {"lifetime_share": \(Self.share), "margin_seconds": 0, "jitter": 0},
             "limits": \(limits)}}}
            """.utf8
        ).write(to: URL(fileURLWithPath: config))
        var daemons: [Process] = []
        defer {
            for daemon in daemons where daemon.isRunning { daemon.terminate() }
            for daemon in daemons { daemon.waitUntilExit() }
        }
        func start(_ node: Int) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["serve", "--data-dir", dataDir(node), "--socket", socket(node), "--config", config]
            var merged = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TOKENVAULT_") }
            merged.merge(environment) { $1 }
            merged["TOKENVAULT_LOG_LEVEL"] = "warning"
            process.environment = merged
            let logPath = root + "/node\(node).log"
            if !FileManager.default.fileExists(atPath: logPath) { writeFile(logPath) }
            let log = FileHandle(forWritingAtPath: logPath)!
            process.standardOutput = log
            process.standardError = log
            try process.run()
            daemons.append(process)
            let deadline = monotonicSeconds() + 30
            while (try? UnixSocketHTTP.request(socket(node), "GET", "/v1/health"))?.status != 200 {
                guard process.isRunning, monotonicSeconds() < deadline else {
                    throw BenchError("node \(node) did not start; see \(root)/node\(node).log")
                }
                usleep(50_000)
            }
        }
        try start(1)
        // Seeded tokens come due only once every PUT is in (a PUT queued behind a backlog of
        // refresh commits would wait); then each refresh's new token is due again at once.
        let seeded = monotonicSeconds()
        let connection = try UnixSocketConnection(path: socket(1))
        for credential in 0..<count {
            let tokens = server.issue(lifetime: Self.seedLifetime)
            let body = #"{"provider": "idp", "token": \#(tokens.responseJSON)}"#
            try connection.send(
                "PUT /v1/credentials/bench/c\(credential) HTTP/1.1\r\nHost: localhost\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            guard let response = try connection.readResponse() else { throw BenchError("node 1 hung up") }
            guard response.status == 201 else {
                throw BenchError("seeding bench/c\(credential) failed: \(response.status) \(response.text)")
            }
        }
        guard monotonicSeconds() - seeded < Self.seedLifetime * Self.share else {
            throw BenchError("seeding took longer than the seeded tokens' refresh point; lower --count")
        }
        for node in 1...nodes where node > 1 { try start(node) }
        Thread.sleep(forTimeInterval: max(0, seeded + Self.seedLifetime * Self.share - monotonicSeconds()) + warmup)
        func succeeded() -> Int {
            (1...nodes).reduce(0) { total, node in
                let text = (try? UnixSocketHTTP.request(socket(node), "GET", "/metrics"))?.text ?? ""
                let line = text.split(separator: "\n").first {
                    $0.hasPrefix(#"tokenvault_refreshes_total{outcome="succeeded"}"#)
                }
                return total + (line.flatMap { Int(Double($0.split(separator: " ").last ?? "") ?? 0) } ?? 0)
            }
        }
        let probes = daemons.map { ProcessProbe(pid: $0.processIdentifier) }
        let cpuBefore = probes.reduce(0) { $0 + $1.cpuSeconds() }
        let wakeUpsBefore = probes.reduce(0) { $0 + $1.threadsAndSwitches().voluntary }
        let machineBefore = ProcessProbe.machineTicks()
        let before = succeeded()
        Thread.sleep(forTimeInterval: seconds)
        let refreshes = succeeded() - before
        if refreshes == 0 {
            throw BenchError("no refresh was committed in \(format(seconds)) s; see the logs in \(root)")
        }
        let cpu = probes.reduce(0) { $0 + $1.cpuSeconds() } - cpuBefore
        let wakeUps = probes.reduce(0) { $0 + $1.threadsAndSwitches().voluntary } - wakeUpsBefore
        let machineAfter = ProcessProbe.machineTicks()
        let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
        let machineCores =
            (machineAfter.busy - machineBefore.busy) / max(1, machineAfter.total - machineBefore.total) * cores
        return Trial(
            nodes: nodes, refreshes: refreshes, perSecond: Double(refreshes) / seconds, daemonCPU: cpu,
            daemonWakeUps: wakeUps, machineCores: machineCores,
            presentedTwice: server.refreshTokensPresentedTwice.count, revoked: server.revokedFamilies)
    }
}
