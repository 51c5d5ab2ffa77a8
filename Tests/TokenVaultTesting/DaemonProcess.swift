import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A `tokenvault serve` process started from the built binary, for end-to-end tests.
/// Its standard output and error go to files, so the log can be searched afterwards.
public final class DaemonProcess: @unchecked Sendable {
    public let process: SpawnedProcess
    public let socketPath: String
    public let logPath: String
    private let outputPath: String

    /// Starts the daemon and waits until it prints "listening on". Throws with its log if it exits.
    /// `launcher` runs it (`["/usr/bin/faketime", "+10m"]`: a daemon whose clock is off).
    public init(
        executable: String = CommandRunner.locateBinary(), launcher: [String] = [], arguments: [String],
        socketPath: String, logDirectory: String,
        environment: [String: String] = [:], timeout: Double = 30
    ) throws {
        self.socketPath = socketPath
        logPath = logDirectory + "/daemon-\(UUID().uuidString.prefix(8)).log"
        outputPath = logPath + ".out"
        writeFile(logPath)
        writeFile(outputPath)
        var base = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TOKENVAULT_") }
        base["CREDENTIALS_DIRECTORY"] = nil
        let command = launcher + [executable, "serve"] + arguments + ["--socket", socketPath]
        process = try SpawnedProcess(
            executable: command[0], arguments: Array(command.dropFirst()),
            environment: base.merging(environment) { $1 }, stdout: outputPath, stderr: logPath)
        let deadline = Date().addingTimeInterval(timeout)
        while !output.contains("listening on") {
            guard process.isRunning else {
                throw SocketTestError("daemon exited with \(process.terminationStatus): \(log)")
            }
            guard Date() < deadline else {
                terminate()
                throw SocketTestError("daemon did not start within \(timeout) s: \(log)")
            }
            usleep(20_000)
        }
    }

    public var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// SIGTERM, then wait; returns the exit status.
    @discardableResult
    public func terminate() -> Int32 {
        process.terminate()
        return process.waitUntilExit()
    }

    /// Sends SIGHUP and waits until the `count`th reload of this daemon is logged, put in force or
    /// refused; false if it was not within `seconds`.
    public func reload(count: Int, within seconds: Double = 15) async throws -> Bool {
        process.signal(SIGHUP)
        return try await waitUntil(within: seconds) {
            let log = log
            return log.components(separatedBy: "configuration reloaded").count
                + log.components(separatedBy: "configuration reload refused").count - 2 >= count
        }
    }

    /// SIGKILL: the daemon gets no chance to clean up (leaves a stale socket).
    public func kill() {
        process.signal(SIGKILL)
        process.waitUntilExit()
    }
}
