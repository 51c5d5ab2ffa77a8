import BenchmarkSupport
import Foundation

/// One timed piece of work. `operation(i)` performs operation number `i` and returns a value
/// that the harness folds into a checksum, so the optimiser cannot drop the work.
struct Workload {
    let label: String
    let iterations: Int
    let operation: (Int) throws -> Int
}

/// The timings of one workload: nanoseconds per operation, one sample per repetition.
struct Measurement {
    let label: String
    let iterations: Int
    let samples: [Double]

    var median: Double {
        let sorted = samples.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    var fastest: Double { samples.min() ?? .nan }
    var slowest: Double { samples.max() ?? .nan }
    var operationsPerSecond: Double { 1e9 / median }
}

/// Runs workloads: a warm-up of a tenth of the iterations each, then `repetitions` timed
/// rounds. Within a round the workloads run one after another (ours, then the references),
/// so a slow patch of the machine (another tenant, a flush) hits both sides alike.
struct Harness {
    let repetitions: Int
    /// Sum of every operation's result; printed at the end so no work is dead code.
    private(set) var checksum = 0

    init(repetitions: Int) { self.repetitions = repetitions }

    mutating func measure(_ workloads: [Workload]) throws -> [Measurement] {
        for workload in workloads {
            checksum &+= try Self.run(workload, iterations: max(workload.iterations / 10, 1))
        }
        var samples = Array(repeating: [Double](), count: workloads.count)
        for _ in 0..<repetitions {
            for (index, workload) in workloads.enumerated() {
                samples[index].append(try time(workload))
            }
        }
        return zip(workloads, samples).map { workload, samples in
            Measurement(label: workload.label, iterations: workload.iterations, samples: samples)
        }
    }

    /// Nanoseconds per operation for one repetition of `workload`.
    private mutating func time(_ workload: Workload) throws -> Double {
        var folded = 0
        let elapsed = try ContinuousClock().measure {
            folded = try Self.run(workload, iterations: workload.iterations)
        }
        checksum &+= folded
        return elapsed.nanoseconds / Double(workload.iterations)
    }

    @inline(never)
    private static func run(_ workload: Workload, iterations: Int) throws -> Int {
        var folded = 0
        for index in 0..<iterations {
            folded &+= try workload.operation(index)
        }
        return folded
    }
}

extension Duration {
    var nanoseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    }

    var seconds: Double { nanoseconds / 1e9 }
}

/// Times a one-off step (filling a table) for the progress log.
func timed<Result>(_ body: () throws -> Result) rethrows -> (result: Result, duration: Duration) {
    let clock = ContinuousClock()
    let start = clock.now
    let result = try body()
    return (result, start.duration(to: clock.now))
}

/// Progress goes to standard error, so standard output is the report alone.
func progress(_ message: String) {
    FileHandle.standardError.write(Data("tokenvault-bench: \(message)\n".utf8))
}

/// The indices `0..<count` in a fixed shuffled order: the sequence of rows a benchmark visits.
func accessOrder(count: Int) -> [Int] {
    var generator = SplitMix64(seed: 0x746F_6B65_6E76_6C74)
    return Array(0..<count).shuffled(using: &generator)
}
