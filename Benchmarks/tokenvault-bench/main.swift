// tokenvault-bench: our wrappers next to raw libsodium / SQLite, for 2 KiB secrets.
//
//   1. seal + open                  Envelope.seal + Envelope.open   vs  libsodium encrypt + decrypt
//   2. point read by id + decrypt   Vault.credentialWithoutWaiting  vs  SQLite point read (+ libsodium open)
//   3. durable update (FULL)        Vault.put of an existing id     vs  INSERT OR REPLACE, one txn per op
//
// Run with `make bench`; results and goals are recorded in docs/benchmarks.md.

import CSodium
import Foundation

/// Sets up the fixtures, runs the three comparisons and prints the report.
func runBenchmarks(_ options: BenchmarkOptions) throws {
    guard sodium_init() >= 0 else { throw BenchmarkError("sodium_init failed") }
    let directory = try makeWorkingDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }

    print("TokenVault benchmarks\(options.quick ? " (--quick: counts / 10)" : "")")
    MachineDescription.current(workingDirectory: directory).lines.forEach { print("  " + $0) }
    print("")

    var harness = Harness(repetitions: options.repetitions)
    var comparisons: [Comparison] = []
    if options.runs(1) {
        progress("1/3 seal + open")
        comparisons.append(try compareSealOpen(options, &harness))
    }
    if options.runs(2) || options.runs(3) {
        let (vault, raw) = try makeFilledFixtures(in: directory, options)
        if options.runs(2) {
            progress("2/3 point read")
            comparisons.append(try comparePointRead(vault, raw, options, &harness))
        }
        if options.runs(3) {
            progress("3/3 durable update")
            comparisons.append(try compareDurableUpdate(vault, raw, options, &harness))
        }
    }

    printReport(Report(comparisons: comparisons, repetitions: options.repetitions), options)
    print("(checksum of all results, keeps the work live: \(harness.checksum))")
}

/// A fresh private directory under the system temporary directory.
func makeWorkingDirectory() throws -> String {
    var template = Array((NSTemporaryDirectory() + "/tokenvault-bench-XXXXXX").utf8CString)
    guard let created = mkdtemp(&template) else { throw BenchmarkError("mkdtemp failed: errno \(errno)") }
    return URL(fileURLWithPath: String(cString: created)).standardizedFileURL.path
}

/// The vault and the raw table, each in its own database file, filled with the same number
/// of 2 KiB records.
func makeFilledFixtures(in directory: String, _ options: BenchmarkOptions) throws -> (VaultFixture, RawFixture) {
    let count = options.recordCount
    let vault = try VaultFixture(path: directory + "/vault.sqlite", count: count)
    let fill = try timed { try vault.fill() }
    let seconds = format(fill.duration.seconds, decimals: 1)
    progress("filled the vault with \(grouped(count)) credentials (Vault.put, FULL) in \(seconds) s")
    let raw = try RawFixture(
        path: directory + "/raw.sqlite", count: count, associatedData: try AssociatedData().withHeader)
    try raw.fill()
    return (vault, raw)
}

func printReport(_ report: Report, _ options: BenchmarkOptions) {
    print("2 KiB secrets; ns per operation, lower is better")
    print(options.quick ? report.compactTable() : report.fullTable())
    print("")
    print(report.legend)
}

do {
    let options = try BenchmarkOptions(arguments: Array(CommandLine.arguments.dropFirst()))
    if options.showHelp {
        print(BenchmarkOptions.usage)
    } else {
        try runBenchmarks(options)
    }
} catch {
    FileHandle.standardError.write(Data("tokenvault-bench: error: \(error)\n".utf8))
    exit(1)
}
