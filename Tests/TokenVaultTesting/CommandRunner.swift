import Foundation

/// Runs the built `tokenvault` binary for end-to-end tests.
public struct CommandRunner: Sendable {
    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    public let executable: String
    public let environment: [String: String]

    /// The `tokenvault` built next to the test bundle (`swift build --build-tests` builds both),
    /// or `$TOKENVAULT_BIN`.
    public static func locateBinary() -> String {
        if let explicit = ProcessInfo.processInfo.environment["TOKENVAULT_BIN"] { return explicit }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("tokenvault").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/tokenvault").path
    }

    public init(executable: String = CommandRunner.locateBinary(), environment: [String: String] = [:]) {
        self.executable = executable
        var base = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TOKENVAULT_") }
        base["CREDENTIALS_DIRECTORY"] = nil
        self.environment = base.merging(environment) { $1 }
    }

    @discardableResult
    public func run(_ arguments: [String], stdin: String? = nil, environment extra: [String: String] = [:]) throws
        -> Result
    {
        // Output and input through files (SpawnedProcess says why not Foundation's Process).
        let base = NSTemporaryDirectory() + "tokenvault-cli-" + UUID().uuidString
        defer { for suffix in [".in", ".out", ".err"] { unlink(base + suffix) } }
        writeFile(base + ".in", Data((stdin ?? "").utf8))
        let process = try SpawnedProcess(
            executable: executable, arguments: arguments, environment: environment.merging(extra) { $1 },
            stdin: base + ".in", stdout: base + ".out", stderr: base + ".err")
        let status = process.waitUntilExit()
        let outData = FileManager.default.contents(atPath: base + ".out") ?? Data()
        let errData = FileManager.default.contents(atPath: base + ".err") ?? Data()
        return Result(
            status: status, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }
}
