import BenchmarkSupport
import Foundation

/// Prints `message` to standard error and exits.
func fail(_ message: String, exitCode: Int32 = 1) -> Never {
    exitWithError(program: "tokenvault-refreshbench", message, exitCode: exitCode)
}

/// Progress goes to standard error, so standard output holds only the report.
func progress(_ message: String) {
    FileHandle.standardError.write(Data("[refreshbench] \(message)\n".utf8))
}

/// CLOCK_MONOTONIC in seconds.
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// This process's resource usage: CPU seconds (user + system) and context switches.
struct ResourceUsage {
    var cpuSeconds: Double
    var voluntarySwitches: Int
    var involuntarySwitches: Int

    static func now() -> ResourceUsage {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func seconds(_ value: timeval) -> Double { Double(value.tv_sec) + Double(value.tv_usec) / 1e6 }
        return ResourceUsage(
            cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime), voluntarySwitches: usage.ru_nvcsw,
            involuntarySwitches: usage.ru_nivcsw)
    }
}

/// `value` with a fixed number of decimals.
func format(_ value: Double, _ decimals: Int = 0) -> String {
    String(format: "%.\(decimals)f", value)
}

/// Thousands separated by commas, as the other benchmark tables print them.
func grouped(_ value: Int) -> String {
    let digits = String(value.magnitude)
    var result = ""
    for (index, character) in digits.enumerated() {
        if index > 0, (digits.count - index) % 3 == 0 { result.append(",") }
        result.append(character)
    }
    return (value < 0 ? "-" : "") + result
}

/// Runs a program to completion; its standard output, or nil with the reason on failure.
@discardableResult
func runProgram(_ path: String, _ arguments: [String], input: String? = nil) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    let inputPipe = Pipe()
    process.standardInput = input == nil ? FileHandle.nullDevice : inputPipe
    try process.run()
    if let input {
        inputPipe.fileHandleForWriting.write(Data(input.utf8))
        try inputPipe.fileHandleForWriting.close()
    }
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw BenchError(
            "\(path) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus): \(errorText)")
    }
    return text
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
