/// A failure of the benchmark itself (bad arguments, a raw SQLite call that failed, a wrong
/// round trip), as opposed to a slow result.
struct BenchmarkError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}

/// Command-line options and the sizes they select.
///
/// Iteration counts are per timed repetition and were chosen so that one repetition takes
/// about 1-3 s on the reference machine (2-core AMD EPYC VM); `--quick` divides every count by
/// ten for smoke runs.
struct BenchmarkOptions {
    static let usage = """
        usage: tokenvault-bench [--quick] [--only 1|2|3]

          --quick    every count divided by ten (smoke run), compact table
          --only N   run comparison N alone (1 seal+open, 2 point read, 3 durable update),
                     e.g. under `perf record`
        """

    /// Smoke-run mode: every count divided by ten, compact table.
    private(set) var quick = false
    /// `--help`: print the usage and run nothing.
    private(set) var showHelp = false
    /// `--only N`: the one comparison to run; nil runs all three.
    private(set) var only: Int?

    /// Timed repetitions of every workload; the report shows their median.
    let repetitions = 5

    /// Bytes of every secret (an access token of 2 KiB).
    static let secretSize = 2048

    init(arguments: [String]) throws(BenchmarkError) {
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            switch argument {
            case "--quick": quick = true
            case "-h", "--help": showHelp = true
            case "--only":
                guard let value = remaining.popFirst().flatMap({ Int($0) }), (1...3).contains(value) else {
                    throw BenchmarkError("--only needs 1, 2 or 3\n\(Self.usage)")
                }
                only = value
            default: throw BenchmarkError("unknown argument '\(argument)'\n\(Self.usage)")
            }
        }
    }

    /// Whether comparison `number` is to run.
    func runs(_ number: Int) -> Bool { only.map { $0 == number } ?? true }

    /// `count`, divided by ten in quick mode.
    func scaled(_ count: Int) -> Int { quick ? max(count / 10, 1) : count }

    /// Credentials in the vault (and rows in the raw table) for the read and update benchmarks.
    var recordCount: Int { scaled(10_000) }

    // Iterations per repetition, one per workload.
    var sealOpenIterations: Int { scaled(300_000) }
    var rawSealOpenIterations: Int { scaled(300_000) }
    var vaultReadIterations: Int { scaled(100_000) }
    var rawReadIterations: Int { scaled(300_000) }
    var rawReadOpenIterations: Int { scaled(200_000) }
    var vaultPutIterations: Int { scaled(8_000) }
    var rawReplaceIterations: Int { scaled(8_000) }
}
