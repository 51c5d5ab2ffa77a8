import Foundation

/// `startup`: a vault of `count` credentials (seeded if short), the real daemon started on it
/// `trials` times, and the price of the peers' per-minute full scan on the same file.
struct StartupBench {
    var dataDir: String
    var count: Int
    var binary: String
    var trials = 3
    var idleSeconds = 10.0
    /// The earliest `refresh_at` is put this far in the future before the trials, so that the
    /// idle window really has nothing due (0: credentials come due during it, ~280/s).
    var dueIn = 120.0
    /// A PostgreSQL database to copy the seeded vault into (`tokenvault migrate-store`) and
    /// start the daemon on instead of the SQLite file.
    var storageURL: String?

    private var databasePath: String { dataDir + "/vault.db" }

    func run() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3") else {
            throw BenchError("needs the sqlite3 shell: apt-get install sqlite3")
        }
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw BenchError("no daemon binary at \(binary); build it or pass --tokenvault PATH")
        }
        print(Machine.describe())
        if !FileManager.default.fileExists(atPath: databasePath) {
            try FileManager.default.createDirectory(
                atPath: dataDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try runProgram(binary, ["init", "--data-dir", dataDir])
            progress("created a vault in \(dataDir)")
        }
        let existing = try credentialCount()
        if existing < count {
            try await Seeder(dataDir: dataDir).seed(start: existing, count: count - existing)
        }
        let stored = try credentialCount()
        try replan()
        let configPath = dataDir + "/refreshbench-config.json"
        try Data(#"{"providers": ["idp"]}"#.utf8).write(to: URL(fileURLWithPath: configPath))
        try FileManager.default.createDirectory(atPath: dataDir + "/run", withIntermediateDirectories: true)
        let size = fileSize(databasePath)
        print(
            "vault: \(grouped(stored)) credentials, \(databasePath) \(format(size / 1e6)) MB; "
                + "config \(#"{"providers": ["idp"]}"#) (name-only: no endpoint, nothing is refreshed)")
        print("refresh_at spread evenly over now+\(format(dueIn)) s .. now+\(format(dueIn + 3600)) s")

        if let storageURL {
            progress("copying the vault to PostgreSQL with tokenvault migrate-store")
            let started = monotonicSeconds()
            try runProgram(
                binary,
                [
                    "migrate-store", "--from", "sqlite:" + databasePath, "--to", storageURL, "--force",
                    "--key-file", dataDir + "/master.key",
                ])
            print("copied to \(storageURL) in \(format(monotonicSeconds() - started)) s; the trials start on it")
        }
        let trial = DaemonTrial(
            binary: binary, dataDir: dataDir, configPath: configPath, socketPath: dataDir + "/run/bench.sock",
            logPath: dataDir + "/refreshbench-daemon.log", idleSeconds: idleSeconds, storageURL: storageURL)
        var results: [DaemonTrial.Result] = []
        for index in 1...trials {
            progress("start-up \(index) of \(trials)")
            results.append(try trial.run())
            sleep(1)
        }
        print(
            """

            | start | spawn -> healthy (s) | CPU to start (s) | read to start (KB) | RSS after start (MB) | RSS after \(format(idleSeconds)) s idle (MB) | peak RSS (MB) | idle CPU (% of a core) | wake-ups while idle | threads | SIGTERM -> exit (s) |
            | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
            """)
        for (index, result) in results.enumerated() {
            print(
                "| \(index + 1) | \(format(result.startup, 3)) | \(format(result.startupCPU, 2)) | "
                    + "\(format(Double(result.startupBytesRead) / 1000)) | "
                    + "\(format(result.rssAfterStart, 1)) | \(format(result.rssAfterIdle, 1)) | "
                    + "\(format(result.peakRSS, 1)) | \(format(result.idleCPUPercent, 2)) | \(result.idleWakeups) | "
                    + "\(result.threads) | \(format(result.stop, 3)) |")
        }
        let failures = results.filter { $0.exitStatus != 0 }
        if !failures.isEmpty { print("FAILED: \(failures.count) trial(s) did not exit cleanly (see the log)") }

        progress("timing full scans with sqlite3")
        let scans = try ScanReference(databasePath: databasePath).run()
        print(
            """

            Reference: visiting every stored credential on the same database (sqlite3 shell, warm page cache, median of 3)

            | query | result | wall (ms) | CPU (ms) | as a per-minute job (% of a core) | per ten minutes (% of a core) |
            | --- | --- | --- | --- | --- | --- |
            """)
        for scan in scans {
            print(
                "| \(scan.label) | \(scan.result) | \(format(scan.medianReal * 1000, 2)) | "
                    + "\(format(scan.medianCPU * 1000, 1)) | \(format(scan.medianCPU / 60 * 100, 3)) | "
                    + "\(format(scan.medianCPU / 600 * 100, 4)) |")
        }
        for scan in scans { print("  \(scan.label): \(scan.sql)") }
    }

    private func credentialCount() throws -> Int {
        let text = try runProgram("/usr/bin/sqlite3", ["-readonly", databasePath, "SELECT count(*) FROM credentials"])
        guard let count = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError("cannot count the credentials in \(databasePath): \(text)")
        }
        return count
    }

    /// Re-plans every credential as a steady flow of one-hour tokens whose `refresh_at` starts
    /// `dueIn` seconds from now, and clears what earlier runs may have recorded on them.
    private func replan() throws {
        let started = monotonicSeconds()
        let base = Int64((Date().timeIntervalSince1970 + dueIn) * 1000)
        let sql = """
            BEGIN;
            UPDATE credentials SET refresh_at = \(base) + abs(random() % 3600000), status = 'active',
                last_error_code = NULL, last_error_message = NULL, last_error_at = NULL, refresh_failures = 0;
            UPDATE credentials SET issued_at = refresh_at - 2700000, expires_at = refresh_at + 900000;
            DELETE FROM refresh_attempts;
            COMMIT;
            PRAGMA wal_checkpoint(TRUNCATE);
            """
        try runProgram("/usr/bin/sqlite3", [databasePath], input: sql)
        progress("re-planned refresh_at of every credential in \(format(monotonicSeconds() - started, 1)) s")
    }

    private func fileSize(_ path: String) -> Double {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.doubleValue ?? 0
    }
}
