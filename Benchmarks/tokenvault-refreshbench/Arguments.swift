import Foundation

/// Hand-rolled `--name value` parsing, as in tokenvault-loadgen: two subcommands and a handful
/// of options are not worth a dependency.
struct Arguments {
    private var remaining: [String]

    init(_ arguments: [String]) {
        remaining = arguments
    }

    mutating func subcommand() -> String? {
        guard let first = remaining.first, !first.hasPrefix("--") || first == "--help" else { return nil }
        remaining.removeFirst()
        return first
    }

    mutating func optionalString(_ name: String) -> String? {
        guard let index = remaining.firstIndex(of: name) else { return nil }
        guard index + 1 < remaining.count else { fail("\(name) needs a value", exitCode: 64) }
        let value = remaining[index + 1]
        remaining.removeSubrange(index...(index + 1))
        return value
    }

    mutating func string(_ name: String) -> String {
        guard let value = optionalString(name) else { fail("missing \(name)\n\(usage)", exitCode: 64) }
        return value
    }

    mutating func int(_ name: String, default defaultValue: Int? = nil) -> Int {
        guard let text = optionalString(name) else {
            guard let defaultValue else { fail("missing \(name)\n\(usage)", exitCode: 64) }
            return defaultValue
        }
        guard let value = Int(text.replacingOccurrences(of: "_", with: "")), value >= 0 else {
            fail("\(name) must be a whole number", exitCode: 64)
        }
        return value
    }

    mutating func double(_ name: String, default defaultValue: Double? = nil) -> Double {
        guard let text = optionalString(name) else {
            guard let defaultValue else { fail("missing \(name)\n\(usage)", exitCode: 64) }
            return defaultValue
        }
        guard let value = Double(text), value >= 0, value.isFinite else {
            fail("\(name) must be a non-negative number", exitCode: 64)
        }
        return value
    }

    /// Refuses anything left over (a typo must not silently run the default).
    func finish() {
        if !remaining.isEmpty { fail("unexpected arguments: \(remaining.joined(separator: " "))", exitCode: 64) }
    }
}
