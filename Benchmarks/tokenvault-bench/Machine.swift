import CSQLite
import CSodium
import Foundation
import TokenVaultCore

/// What the numbers were measured on; printed above the results.
struct MachineDescription {
    let processors: Int
    let cpuModel: String
    let kernel: String
    /// /proc/loadavg when the run started: other work on the machine skews every number.
    let loadAverage: String
    let memoryLocked: Bool
    let sqliteVersion: String
    let sodiumVersion: String
    /// Where the databases live, and the file system under it (durable writes depend on it).
    let storage: String

    static func current(workingDirectory: String) -> MachineDescription {
        MachineDescription(
            processors: ProcessInfo.processInfo.activeProcessorCount,
            cpuModel: cpuModel(),
            kernel: kernel(),
            loadAverage: loadAverage(),
            memoryLocked: SecretBytes.isMemoryLocked,
            sqliteVersion: String(cString: sqlite3_libversion()),
            sodiumVersion: String(cString: sodium_version_string()),
            storage: "\(workingDirectory) (\(fileSystem(of: workingDirectory)))")
    }

    var lines: [String] {
        var lines = [
            "processors (nproc):  \(processors)",
            "CPU:                 \(cpuModel)",
            "kernel:              \(kernel)",
            "load average:        \(loadAverage) (at start)",
            "SQLite / libsodium:  \(sqliteVersion) / \(sodiumVersion)",
            "databases in:        \(storage)",
            "SecretBytes.isMemoryLocked: \(memoryLocked)",
        ]
        #if DEBUG
            lines.append("WARNING: debug build; build with -c release for meaningful numbers")
        #endif
        return lines
    }

    /// The first "model name" of /proc/cpuinfo.
    private static func cpuModel() -> String {
        guard let cpuinfo = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "unknown" }
        for line in cpuinfo.split(separator: "\n") where line.hasPrefix("model name") {
            if let colon = line.firstIndex(of: ":") {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return "unknown"
    }

    /// The 1, 5 and 15 minute load averages.
    private static func loadAverage() -> String {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "unknown" }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// `uname -srm`.
    private static func kernel() -> String {
        var names = utsname()
        guard uname(&names) == 0 else { return "unknown" }
        func field<T>(_ value: T) -> String {
            withUnsafeBytes(of: value) { bytes in String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self) }
        }
        return "\(field(names.sysname)) \(field(names.release)) \(field(names.machine))"
    }

    /// Type and device of the mount that holds `path`, from /proc/mounts (Linux only).
    private static func fileSystem(of path: String) -> String {
        guard let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return "unknown fs" }
        var best: (mountPoint: String, description: String)?
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 3 else { continue }
            let mountPoint = String(fields[1])
            let contains = path == mountPoint || path.hasPrefix(mountPoint == "/" ? "/" : mountPoint + "/")
            if contains, mountPoint.count >= (best?.mountPoint.count ?? -1) {
                best = (mountPoint, "\(fields[2]) on \(fields[0])")
            }
        }
        return best?.description ?? "unknown fs"
    }
}
