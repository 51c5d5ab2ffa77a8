import BenchmarkSupport
import Foundation
import Logging
import TokenVaultCore
import TokenVaultCourier

/// The refresh engine's benchmark (docs/benchmarks.md, "Refresh engine"). Two subcommands:
///
///     tokenvault-refreshbench startup --data-dir D --count 1000000 [--tokenvault PATH]
///     tokenvault-refreshbench refresh --count N --seconds S [--concurrency C] [--data-dir D]

let usage = """
    usage: tokenvault-refreshbench startup --data-dir DIR --count N [--tokenvault PATH] [--trials 3]
                                           [--idle SECONDS] [--due-in SECONDS] [--storage-url URL]
           tokenvault-refreshbench refresh --count N --seconds S [--concurrency C] [--in-flight M]
                                           [--lifetime L] [--warmup W] [--durability full|normal]
                                           [--provider loopback|direct|keepalive|memory] [--data-dir DIR]
                                           [--tls] [--keep-alive SECONDS]
           tokenvault-refreshbench http [--client oauth2|fresh|keepalive] [--concurrency C] [--seconds S]
           tokenvault-refreshbench nodes --dir DIR --storage-urls URL1,URL2,URL3 [--nodes 1,2,3] [--count N]
                                         [--seconds S] [--warmup W] [--lifetime L] [--concurrency C]
                                         [--answer-delay D] [--keep-alive SECONDS]

    startup  seeds the vault in DIR up to N credentials of provider `idp` (`tokenvault init` first
             if there is none; rows written straight into the database, 10,000 per NORMAL
             transaction), re-plans their refresh_at evenly over one hour starting --due-in seconds
             from now (default 120, so nothing comes due while measuring), then starts
             `tokenvault serve` on it --trials times with the config {"providers": ["idp"]} (no
             endpoint) and reports the time from spawn to the first 200 from GET /v1/health, RSS,
             and CPU over --idle seconds (default 10) of idleness. Then times full scans of the
             same database with the sqlite3 shell (the peers' approach). PATH defaults to
             `tokenvault` next to this executable. With --storage-url, the seeded vault is copied
             into that PostgreSQL database (migrate-store --force) and the daemon starts on it.
    refresh  runs the engine in this process against the loopback test provider: N credentials
             (default 10,000), all due, refreshed continuously (the provider grants L-second
             access tokens, default 1, so each is due again after ~L/2 s) for S seconds after W
             seconds of warm-up (default 3). C is the provider's concurrency limit (default 64), M
             the engine's maximumInFlight (default 256). Reports refreshes/s, the per-phase
             latencies, CPU per refresh, and the safety checks. --durability normal commits at
             synchronous=NORMAL: a labelled comparison only, never how the daemon runs.
             The provider's calls go through the courier (this binary started as `courier`), as
             in the daemon; --provider direct sends them from this process instead (a comparison).
             --provider memory replaces the loopback HTTP provider with an in-memory one that
             rotates tokens the same way: the engine and storage alone, also a comparison.
             --provider keepalive sends the same grants to the loopback server over kept-alive
             connections (a bare NIO client): the connection-reuse experiment.
             --tls serves the loopback provider over HTTPS (a test CA, trusted through ca_file);
             --keep-alive sets the provider's keep_alive_seconds (0: a connection per call).
    http     the provider round trip alone (no engine, no database): C workers (default 64) each
             walk a token family for S seconds (default 10) with OAuth2Provider (oauth2, a fresh
             connection per call), a bare NIO client with a fresh connection per call (fresh), or
             the bare client on one kept-alive connection per worker (keepalive).
    nodes    durable refreshes per second with 1, 2, 3… daemons (`tokenvault serve`, PATH as for
             startup) sharing one PostgreSQL vault: per trial a fresh database from --storage-urls
             (one each, in order), N credentials (default 1,000) seeded through node 1 with tokens
             of the loopback provider (L-second access tokens, default 2), every node refreshing;
             counts the nodes' committed refreshes over S seconds (default 20) after W (default 5).
             C is each node's limits.concurrency (default 64); D the seconds the provider takes to
             answer (default 0), which bounds a node at C/D refreshes per second, as a remote one would.
             --keep-alive sets the instance's keep_alive_seconds (0: a connection per call).
    """

var arguments = Arguments(
    Array(CommandLine.arguments.dropFirst()), program: "tokenvault-refreshbench", usage: usage,
    acceptsDigitSeparators: true)
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
        dueIn: arguments.double("--due-in", default: 120), storageURL: arguments.optionalString("--storage-url"))
    arguments.finish()
    do {
        try await bench.run()
    } catch {
        fail("startup failed: \(error)")
    }
case "refresh":
    var bench = RefreshBench()
    bench.count = arguments.int("--count", default: 10_000)
    bench.seconds = arguments.double("--seconds", default: 20)
    bench.warmup = arguments.double("--warmup", default: 3)
    bench.settings.concurrency = arguments.int("--concurrency", default: 64)
    bench.settings.maximumInFlight = arguments.int("--in-flight", default: 256)
    bench.settings.lifetime = max(1, arguments.int("--lifetime", default: 1))
    switch arguments.optionalString("--durability") ?? "full" {
    case "full": bench.settings.durability = nil
    case "normal": bench.settings.durability = .normal
    default: fail("--durability must be full or normal", exitCode: 64)
    }
    let providerText = arguments.optionalString("--provider") ?? "loopback"
    guard let provider = RefreshRig.ProviderChoice(rawValue: providerText) else {
        fail("--provider must be loopback, direct, keepalive or memory", exitCode: 64)
    }
    bench.settings.provider = provider
    bench.settings.tls = arguments.flag("--tls")
    bench.settings.keepAliveSeconds = arguments.optionalString("--keep-alive").flatMap(Double.init)
    bench.dataDir = arguments.optionalString("--data-dir")
    arguments.finish()
    do {
        try await bench.run()
    } catch {
        fail("refresh failed: \(error)")
    }
case "http":
    var bench = HTTPBench()
    let client = arguments.optionalString("--client") ?? "oauth2"
    guard let parsed = HTTPBench.Client(rawValue: client) else {
        fail("--client must be oauth2, fresh or keepalive", exitCode: 64)
    }
    bench.client = parsed
    bench.concurrency = max(1, arguments.int("--concurrency", default: 64))
    bench.seconds = arguments.double("--seconds", default: 10)
    bench.warmup = arguments.double("--warmup", default: 2)
    arguments.finish()
    do {
        try await bench.run()
    } catch {
        fail("http failed: \(error)")
    }
case "nodes":
    let ownDirectory = URL(
        fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
    ).deletingLastPathComponent().path
    let urls = arguments.string("--storage-urls").split(separator: ",").map(String.init)
    let nodeCounts = (arguments.optionalString("--nodes") ?? "1,2,3").split(separator: ",").compactMap { Int($0) }
    guard urls.count >= nodeCounts.count, !nodeCounts.isEmpty else {
        fail("--storage-urls needs one PostgreSQL database per trial (--nodes, default 1,2,3)", exitCode: 64)
    }
    var bench = NodesBench(
        binary: arguments.optionalString("--tokenvault") ?? ownDirectory + "/tokenvault",
        directory: arguments.string("--dir"), storageURLs: urls, nodeCounts: nodeCounts)
    bench.count = arguments.int("--count", default: 1000)
    bench.seconds = arguments.double("--seconds", default: 20)
    bench.warmup = arguments.double("--warmup", default: 5)
    bench.lifetime = arguments.double("--lifetime", default: 2)
    bench.concurrency = arguments.int("--concurrency", default: 64)
    bench.answerDelay = arguments.double("--answer-delay", default: 0)
    bench.keepAliveSeconds = arguments.optionalString("--keep-alive").flatMap(Double.init)
    arguments.finish()
    do {
        try await bench.run()
    } catch {
        fail("nodes failed: \(error)")
    }
case "courier":
    // This binary as the courier of its own `refresh --provider loopback` runs.
    let spool = arguments.string("--spool")
    arguments.finish()
    var logger = Logger(label: "refreshbench.courier") { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = .warning
    exit(await Courier.run(descriptor: 3, spoolDirectory: spool, logger: logger))
case "help", "-h", "--help":
    print(usage)
default:
    fail("expected a subcommand\n\(usage)", exitCode: 64)
}
