#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Hand-rolled `--name value` parsing for the benchmark executables: a few subcommands and a
/// handful of options are not worth a dependency. Every mistake exits with status 64 and says
/// what was wrong, prefixed with the program's name.
public struct Arguments {
    private var remaining: [String]
    private let program: String
    private let usage: String
    /// Whether whole numbers may be written with `_` between digits (`1_000_000`).
    private let acceptsDigitSeparators: Bool

    public init(_ arguments: [String], program: String, usage: String, acceptsDigitSeparators: Bool = false) {
        remaining = arguments
        self.program = program
        self.usage = usage
        self.acceptsDigitSeparators = acceptsDigitSeparators
    }

    public mutating func subcommand() -> String? {
        guard let first = remaining.first, !first.hasPrefix("--") || first == "--help" else { return nil }
        remaining.removeFirst()
        return first
    }

    public mutating func optionalString(_ name: String) -> String? {
        guard let index = remaining.firstIndex(of: name) else { return nil }
        guard index + 1 < remaining.count else { fail("\(name) needs a value") }
        let value = remaining[index + 1]
        remaining.removeSubrange(index...(index + 1))
        return value
    }

    /// Whether the flag `name` (no value) was given.
    public mutating func flag(_ name: String) -> Bool {
        guard let index = remaining.firstIndex(of: name) else { return false }
        remaining.remove(at: index)
        return true
    }

    public mutating func string(_ name: String) -> String {
        guard let value = optionalString(name) else { fail("missing \(name)\n\(usage)") }
        return value
    }

    public mutating func int(_ name: String, default defaultValue: Int? = nil) -> Int {
        guard let text = optionalString(name) else {
            guard let defaultValue else { fail("missing \(name)\n\(usage)") }
            return defaultValue
        }
        let digits = acceptsDigitSeparators ? text.filter { $0 != "_" } : text
        guard let value = Int(digits), value >= 0 else { fail("\(name) must be a whole number") }
        return value
    }

    /// A duration in seconds: every fractional option of the benchmarks is one.
    public mutating func double(_ name: String, default defaultValue: Double? = nil) -> Double {
        guard let text = optionalString(name) else {
            guard let defaultValue else { fail("missing \(name)\n\(usage)") }
            return defaultValue
        }
        guard let value = Double(text), value >= 0, value.isFinite else {
            fail("\(name) must be a non-negative number of seconds")
        }
        return value
    }

    /// Refuses anything left over (a typo must not silently run the default).
    public func finish() {
        if !remaining.isEmpty { fail("unexpected arguments: \(remaining.joined(separator: " "))") }
    }

    private func fail(_ message: String) -> Never {
        exitWithError(program: program, message, exitCode: 64)
    }
}

/// Writes `program: message` to standard error and exits.
public func exitWithError(program: String, _ message: String, exitCode: Int32 = 1) -> Never {
    let line = Array("\(program): \(message)\n".utf8)
    line.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
    exit(exitCode)
}
