import Foundation
import TokenVaultCore

/// The refresh engine's benchmark (docs/benchmarks.md, "Refresh engine"). One subcommand so far:
///
///     tokenvault-refreshbench startup --data-dir D --count 1000000 [--tokenvault PATH]

let usage = """
    usage: tokenvault-refreshbench startup --data-dir DIR --count N [--tokenvault PATH] [--trials 3]
                                           [--idle SECONDS] [--due-in SECONDS]

    startup  seeds the vault in DIR up to N credentials of provider `idp` (`tokenvault init` first
             if there is none; rows written straight into the database, 10,000 per NORMAL
             transaction), re-plans their refresh_at evenly over one hour starting --due-in seconds
             from now (default 120, so nothing comes due while measuring), then starts
             `tokenvault serve` on it --trials times with the config {"providers": ["idp"]} (no
             endpoint) and reports the time from spawn to the first 200 from GET /v1/health, RSS,
             and CPU over --idle seconds (default 10) of idleness. Then times full scans of the
             same database with the sqlite3 shell (the peers' approach). PATH defaults to
             `tokenvault` next to this executable.
    """

var arguments = Arguments(Array(CommandLine.arguments.dropFirst()))
switch arguments.subcommand() {
case "startup":
    let ownDirectory = URL(
        fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
    ).deletingLastPathComponent().path
    let bench = StartupBench(
        dataDir: arguments.string("--data-dir"), count: arguments.int("--count"),
        binary: arguments.optionalString("--tokenvault") ?? ownDirectory + "/tokenvault",
        trials: arguments.int("--trials", default: 3), idleSeconds: arguments.double("--idle", default: 10),
        dueIn: arguments.double("--due-in", default: 120))
    arguments.finish()
    do {
        try bench.run()
    } catch {
        fail("startup failed: \(error)")
    }
case "help", "-h", "--help":
    print(usage)
default:
    fail("expected a subcommand\n\(usage)", exitCode: 64)
}
