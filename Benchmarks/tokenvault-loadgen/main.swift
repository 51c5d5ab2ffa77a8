import BenchmarkSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Load generator for the daemon's socket API (docs/benchmarks.md, "Local API over the Unix
/// socket"). Three subcommands:
///
///     tokenvault-loadgen seed --data-dir D --count N [--start I] [--batch B]
///     tokenvault-loadgen run --socket S --connections N --duration SECONDS --credentials COUNT
///                            [--warmup SECONDS] [--order random|sequential]
///
/// `seed` writes credentials `bench/c<i>` straight into an initialised vault (the daemon must
/// not be running on it); `run` drives `GET /v1/credentials/bench/c<i>/token` over N keep-alive
/// connections (one polling thread, or one blocking thread each) and prints throughput and
/// latency percentiles; `hold` keeps many idle connections and watch streams open.

let usage = """
    usage: tokenvault-loadgen seed --data-dir DIR --count N [--start I] [--batch B]
           tokenvault-loadgen run --socket PATH --connections N --duration SECONDS --credentials COUNT
                                  [--warmup SECONDS] [--order random|sequential] [--namespace NS]
                                  [--requests TOTAL] [--client auto|events|threads] [--writes] [--routed]
           tokenvault-loadgen run --socket PATH|tcp:IP:PORT --connections N --duration SECONDS --path /fixed/path
                                  [--expect STATUS] [--warmup SECONDS] [--routed]
           tokenvault-loadgen hold --socket PATH --seconds SECONDS [--idle N] [--watches M]
                                  [--credentials COUNT] [--namespace NS]
           tokenvault-loadgen staleness --writer PATH --reader PATH [--rounds N] [--credentials C]

    seed  stores N credentials <ns>/c<I>..c<I+N-1> (namespace "bench") with one-hour T-ID-like
          tokens, B per transaction (default 1000), into the vault in DIR (created by
          `tokenvault init`; the daemon must not be running on it).
    run   opens N keep-alive connections, requests GET .../c<k>/token with k
          random (or walking sequentially) below COUNT, and reports requests/s and latency
          percentiles of the requests started after the warm-up (default 2 s). The last line
          is machine-readable: RESULT key=value ... With --requests, the run also ends once
          that many requests (after the warm-up) are done; with --order sequential and TOTAL =
          COUNT, every credential is read exactly once.
          --client events: one thread polls every connection, as redis-benchmark does;
          --client threads: one blocking thread per connection; --client auto (default):
          threads for one connection (a single caller's blocking send and receive), events
          for more.
          With --path, every request is GET of that path instead, and responses with status
          STATUS (default 200) count as successes: a baseline for the HTTP layer alone.
          --socket tcp:IP:PORT connects over TCP instead (an upstream called directly, the
          proxy's baseline).
          With --writes, every request stores c<k> again (PUT with a fixed T-ID token payload,
          expect 200): each write is a durable commit, so this measures group commit.
          With --routed, every request carries `Connection: keep-alive`, which the daemon's
          event loop leaves to the router: the same request answered the other way.
    hold  opens N idle connections (sending nothing) and M `watch` streams over COUNT
          credentials, prints READY once every stream has its first line, keeps everything
          open for SECONDS (reading the streams' heartbeats), then prints RESULT with how
          many were still open: what open connections cost the daemon.
    staleness  two daemons on one PostgreSQL vault: N times (default 500), the reader node
          reads stale/c<k> (k cycling below C, default 20), the writer node replaces its tokens,
          and the reader is polled until it serves the new token; prints the percentiles of
          that delay (from the PUT's response).
    """

func fail(_ message: String, exitCode: Int32 = 1) -> Never {
    exitWithError(program: "tokenvault-loadgen", message, exitCode: exitCode)
}

var arguments = Arguments(Array(CommandLine.arguments.dropFirst()), program: "tokenvault-loadgen", usage: usage)
switch arguments.subcommand() {
case "seed":
    let options = SeedOptions(
        dataDir: arguments.string("--data-dir"),
        count: arguments.int("--count"),
        start: arguments.int("--start", default: 0),
        batch: arguments.int("--batch", default: 1000),
        namespace: arguments.optionalString("--namespace") ?? "bench")
    arguments.finish()
    do {
        try await seed(options)
    } catch {
        fail("seed failed: \(error)")
    }
case "run":
    let orderText = arguments.optionalString("--order") ?? "random"
    guard let order = RunOptions.Order(rawValue: orderText) else {
        fail("--order must be random or sequential", exitCode: 64)
    }
    let clientText = arguments.optionalString("--client") ?? "auto"
    guard clientText == "auto" || RunOptions.Client(rawValue: clientText) != nil else {
        fail("--client must be auto, events or threads", exitCode: 64)
    }
    let fixedPath = arguments.optionalString("--path")
    let connections = arguments.int("--connections")
    let client = RunOptions.Client(rawValue: clientText) ?? (connections == 1 ? .threads : .events)
    let options = RunOptions(
        socketPath: arguments.string("--socket"),
        connections: connections,
        duration: arguments.double("--duration"),
        warmup: arguments.double("--warmup", default: 2),
        credentials: fixedPath == nil ? arguments.int("--credentials") : arguments.int("--credentials", default: 1),
        namespace: arguments.optionalString("--namespace") ?? "bench",
        order: order,
        fixedPath: fixedPath,
        expectedStatus: arguments.int("--expect", default: 200),
        requests: arguments.optionalString("--requests").map { text in
            guard let total = Int(text), total > 0 else { fail("--requests must be a positive number", exitCode: 64) }
            return total
        },
        client: client, writes: arguments.flag("--writes"), routed: arguments.flag("--routed"))
    arguments.finish()
    runLoad(options)
case "hold":
    let options = HoldOptions(
        socketPath: arguments.string("--socket"), idle: arguments.int("--idle", default: 0),
        watches: arguments.int("--watches", default: 0), credentials: arguments.int("--credentials", default: 1),
        namespace: arguments.optionalString("--namespace") ?? "bench", seconds: arguments.double("--seconds"))
    arguments.finish()
    hold(options)
case "staleness":
    let options = StalenessOptions(
        writer: arguments.string("--writer"), reader: arguments.string("--reader"),
        rounds: arguments.int("--rounds", default: 500), credentials: arguments.int("--credentials", default: 20))
    arguments.finish()
    measureStaleness(options)
case "help", "-h", "--help":
    print(usage)
default:
    fail("expected a subcommand\n\(usage)", exitCode: 64)
}
