import Foundation

/// Reads another (or this) process's memory and CPU time from /proc.
struct ProcessProbe {
    let pid: Int32

    /// Resident set now and its peak (`VmRSS`, `VmHWM`), in MB (10^6 bytes).
    func memory() -> (rss: Double, peak: Double) {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        func kilobytes(_ key: String) -> Double {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }) else { return 0 }
            return Double(line.split(separator: " ").dropFirst().first { Double($0) != nil } ?? "0") ?? 0
        }
        return (kilobytes("VmRSS") * 1024 / 1e6, kilobytes("VmHWM") * 1024 / 1e6)
    }

    /// User + system CPU seconds of the whole process (all threads).
    func cpuSeconds() -> Double {
        Self.cpuSeconds(statPath: "/proc/\(pid)/stat")
    }

    /// Threads, and context switches summed over them (each voluntary one is a sleep and a wake-up).
    func threadsAndSwitches() -> (threads: Int, voluntary: Int, involuntary: Int) {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var voluntary = 0
        var involuntary = 0
        for task in tasks {
            let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: ":")
                guard parts.count == 2, let value = Int(parts[1].trimmingCharacters(in: .whitespaces)) else { continue }
                if parts[0] == "voluntary_ctxt_switches" { voluntary += value }
                if parts[0] == "nonvoluntary_ctxt_switches" { involuntary += value }
            }
        }
        return (tasks.count, voluntary, involuntary)
    }

    /// Bytes the process has read through read/pread system calls (`rchar` in /proc/PID/io),
    /// whether they came from the page cache or the disk.
    func bytesRead() -> Int {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix("rchar:") }
        return line.flatMap { Int($0.dropFirst(6).trimmingCharacters(in: .whitespaces)) } ?? 0
    }

    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// utime + stime (fields 14 and 15) of a `stat` file; the name in parentheses may hold spaces.
    static func cpuSeconds(statPath: String) -> Double {
        guard let text = try? String(contentsOfFile: statPath, encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is the state (field 3), so utime (14) and stime (15) are at 11 and 12.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / ticksPerSecond
    }

    /// Busy and total jiffies of the whole machine (/proc/stat), to see whether anything else ran.
    static func machineTicks() -> (busy: Double, total: Double) {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
        else { return (0, 0) }
        let values = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard values.count >= 5 else { return (0, 0) }
        let total = values.prefix(8).reduce(0, +)
        let idle = values[3] + values[4]
        return (total - idle, total)
    }
}
