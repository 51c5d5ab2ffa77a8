import Foundation
import TokenVaultCore

/// The peers' approach, priced on the same database: a scan that visits every stored
/// credential (Vault's OAuth app plugin does one a minute, Nango one every ten minutes),
/// timed by the `sqlite3` shell's `.timer`. Next to it, the indexed lookup our scheduler
/// makes instead. Each query runs `repetitions` times in one session; the page cache is warm
/// (the daemon trials just read the same file).
struct ScanReference {
    struct Timing {
        let label: String
        let sql: String
        /// Wall, user and system seconds of each repetition.
        var runs: [(real: Double, user: Double, system: Double)] = []
        var result = ""

        var medianReal: Double { runs.map(\.real).sorted()[runs.count / 2] }
        var medianCPU: Double { runs.map { $0.user + $0.system }.sorted()[runs.count / 2] }
    }

    let databasePath: String
    var repetitions = 3

    func run() throws -> [Timing] {
        let soon = Timestamp.now().adding(seconds: 60).milliseconds
        var timings = [
            Timing(label: "count(*) of every row", sql: "SELECT count(*) FROM credentials;"),
            Timing(
                label: "read every row's refresh_at (table scan)",
                sql: "SELECT count(*) FROM credentials NOT INDEXED WHERE refresh_at <= \(soon);"),
            Timing(
                label: "ours: earliest refresh_at (index)",
                sql: "SELECT min(refresh_at) FROM credentials INDEXED BY credentials_refresh_due "
                    + "WHERE refresh_at IS NOT NULL;"),
        ]
        for index in timings.indices {
            var script = ".timer on\n"
            for _ in 0..<repetitions { script += timings[index].sql + "\n" }
            let output = try runProgram("/usr/bin/sqlite3", ["-readonly", databasePath], input: script)
            for line in output.split(separator: "\n") {
                if line.hasPrefix("Run Time:") {
                    let numbers = line.split(separator: " ").compactMap { Double($0) }
                    if numbers.count == 3 { timings[index].runs.append((numbers[0], numbers[1], numbers[2])) }
                } else {
                    timings[index].result = String(line)
                }
            }
            guard timings[index].runs.count == repetitions else {
                throw BenchError("could not read sqlite3's timings from: \(output)")
            }
        }
        return timings
    }
}
