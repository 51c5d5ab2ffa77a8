import Foundation

/// CPU seconds per thread group of this process (/proc/self/task/*): threads are grouped by
/// name with digits removed, e.g. `NIO-ELT-#` for the event loops. What `top -H` shows, as
/// numbers over a measured interval.
struct ThreadCPU {
    var seconds: [String: Double] = [:]
    var threads: [String: Int] = [:]

    static func now() -> ThreadCPU {
        var result = ThreadCPU()
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? "?"
            let group = String(name.trimmingCharacters(in: .whitespacesAndNewlines).map { $0.isNumber ? "#" : $0 })
                .replacingOccurrences(of: "##", with: "#")
            result.seconds[group, default: 0] += ProcessProbe.cpuSeconds(statPath: "/proc/self/task/\(task)/stat")
            result.threads[group, default: 0] += 1
        }
        return result
    }

    /// CPU used by each group between `earlier` and `self`, largest first.
    func since(_ earlier: ThreadCPU) -> [(group: String, seconds: Double, threads: Int)] {
        seconds.map { group, total in
            (group, total - (earlier.seconds[group] ?? 0), threads[group] ?? 0)
        }.sorted { $0.seconds > $1.seconds }
    }
}
