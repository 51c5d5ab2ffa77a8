import Foundation
import TokenVaultTesting

/// One start of the real daemon binary on an existing vault: time from spawn to the first
/// `200` from `GET /v1/health` on its socket, memory after start and after an idle interval,
/// and the CPU it used while idle. Ends with SIGTERM.
struct DaemonTrial {
    struct Result {
        var startup: Double
        var healthProbes: Int
        var startupCPU: Double
        /// Bytes read (page cache or disk) from spawn to healthy.
        var startupBytesRead: Int
        var rssAfterStart: Double
        var rssAfterIdle: Double
        var peakRSS: Double
        var idleCPU: Double
        var idleSeconds: Double
        var idleWakeups: Int
        var threads: Int
        var stop: Double
        var exitStatus: Int32

        /// Percent of one core.
        var idleCPUPercent: Double { idleCPU / idleSeconds * 100 }
    }

    let binary: String
    let dataDir: String
    let configPath: String
    let socketPath: String
    let logPath: String
    let idleSeconds: Double
    var storageURL: String? = nil

    func run() throws -> Result {
        try? FileManager.default.removeItem(atPath: socketPath)
        writeFile(logPath)
        let log = FileHandle(forWritingAtPath: logPath)!
        log.seekToEndOfFile()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments =
            ["serve", "--data-dir", dataDir, "--socket", socketPath, "--config", configPath]
            + (storageURL.map { ["--storage-url", $0] } ?? [])
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TOKENVAULT_") }
        environment["TOKENVAULT_LOG_LEVEL"] = "warning"
        process.environment = environment
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice

        let spawned = monotonicSeconds()
        try process.run()
        var probes = 0
        while true {
            probes += 1
            if let response = try? UnixSocketHTTP.request(socketPath, "GET", "/v1/health"), response.status == 200 {
                break
            }
            guard process.isRunning else {
                throw BenchError("the daemon exited with \(process.terminationStatus); see \(logPath)")
            }
            guard monotonicSeconds() - spawned < 60 else {
                process.terminate()
                throw BenchError("no healthy answer within 60 s; see \(logPath)")
            }
            usleep(2000)
        }
        let startup = monotonicSeconds() - spawned
        let probe = ProcessProbe(pid: process.processIdentifier)
        let afterStart = probe.memory()
        let startupBytesRead = probe.bytesRead()
        let cpuBefore = probe.cpuSeconds()
        let switchesBefore = probe.threadsAndSwitches()
        let idleStarted = monotonicSeconds()
        usleep(useconds_t(idleSeconds * 1e6))
        let cpuAfter = probe.cpuSeconds()
        let idle = monotonicSeconds() - idleStarted
        let switchesAfter = probe.threadsAndSwitches()
        let afterIdle = probe.memory()

        let stopping = monotonicSeconds()
        process.terminate()
        process.waitUntilExit()
        return Result(
            startup: startup, healthProbes: probes, startupCPU: cpuBefore, startupBytesRead: startupBytesRead,
            rssAfterStart: afterStart.rss,
            rssAfterIdle: afterIdle.rss, peakRSS: afterIdle.peak, idleCPU: cpuAfter - cpuBefore, idleSeconds: idle,
            idleWakeups: switchesAfter.voluntary - switchesBefore.voluntary, threads: switchesAfter.threads,
            stop: monotonicSeconds() - stopping, exitStatus: process.terminationStatus)
    }
}
