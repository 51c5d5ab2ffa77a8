import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A `tokenvault serve` process started from the built binary, for end-to-end tests.
/// Its standard output and error go to files, so the log can be searched afterwards.
public final class DaemonProcess: @unchecked Sendable {
    public let process = Process()
    public let socketPath: String
    public let logPath: String
    private let outputPath: String

    /// Starts the daemon and waits until it prints "listening on". Throws with its log if it exits.
    public init(
        executable: String = CommandRunner.locateBinary(), arguments: [String], socketPath: String,
        logDirectory: String,
        environment: [String: String] = [:], timeout: Double = 30
    ) throws {
        self.socketPath = socketPath
        logPath = logDirectory + "/daemon-\(UUID().uuidString.prefix(8)).log"
        outputPath = logPath + ".out"
        FileManager.default.createFile(atPath: logPath, contents: nil)
        FileManager.default.createFile(atPath: outputPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve"] + arguments + ["--socket", socketPath]
        var base = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TOKENVAULT_") }
        base["CREDENTIALS_DIRECTORY"] = nil
        process.environment = base.merging(environment) { $1 }
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)
        process.standardError = FileHandle(forWritingAtPath: logPath)
        process.standardInput = FileHandle.nullDevice
        try process.run()
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
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// SIGKILL: the daemon gets no chance to clean up (leaves a stale socket).
    public func kill() {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit {
        if process.isRunning {
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
