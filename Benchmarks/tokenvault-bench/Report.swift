/// Formats the comparisons as a plain-text table (also valid inside a Markdown code block).
struct Report {
    let comparisons: [Comparison]
    let repetitions: Int

    /// Every measurement with its iterations, median, spread and ops/s; ratios on the
    /// reference rows.
    func fullTable() -> String {
        var table = TextTable(
            header: ["#", "measurement", "iterations", "ns/op", "min-max ns/op", "ops/s", "ours/ref", "goal"],
            rightAligned: [2, 3, 4, 5, 6])
        for comparison in comparisons {
            table.add(["\(comparison.number)", comparison.title, "", "", "", "", "", ""])
            table.add(row(comparison.ours, ratio: nil, goal: ""))
            for context in comparison.context {
                table.add(row(context, ratio: comparison.ratio(to: context), goal: "(context)"))
            }
            table.add(row(comparison.reference, ratio: comparison.ratio, goal: verdict(comparison)))
        }
        return table.rendered()
    }

    /// One line per (ours, reference) pair: for smoke runs.
    func compactTable() -> String {
        var table = TextTable(
            header: ["#", "vs reference", "ours ns/op", "ref ns/op", "ours/ref", "goal"], rightAligned: [2, 3, 4])
        for comparison in comparisons {
            for context in comparison.context {
                table.add(compactRow(comparison, context, goal: "(context)"))
            }
            table.add(compactRow(comparison, comparison.reference, goal: verdict(comparison)))
        }
        return table.rendered()
    }

    var legend: String {
        """
        ns/op: median of \(repetitions) timed repetitions (after a warm-up of a tenth of the iterations); \
        min-max: fastest and slowest repetition.
        goal: ours/ref <= \(format(Comparison.goalRatio, decimals: 1))x against the like-for-like reference.
        """
    }

    private func row(_ measurement: Measurement, ratio: Double?, goal: String) -> [String] {
        [
            "", "  " + measurement.label, grouped(measurement.iterations), grouped(measurement.median),
            "\(grouped(measurement.fastest))-\(grouped(measurement.slowest))",
            grouped(measurement.operationsPerSecond), ratio.map { format($0, decimals: 2) + "x" } ?? "", goal,
        ]
    }

    private func compactRow(_ comparison: Comparison, _ reference: Measurement, goal: String) -> [String] {
        [
            "\(comparison.number)", reference.label, grouped(comparison.ours.median), grouped(reference.median),
            format(comparison.ratio(to: reference), decimals: 2) + "x", goal,
        ]
    }

    private func verdict(_ comparison: Comparison) -> String { comparison.meetsGoal ? "met" : "MISSED" }
}

/// Columns padded to their widest cell.
struct TextTable {
    private var rows: [[String]]
    private let rightAligned: Set<Int>

    init(header: [String], rightAligned: Set<Int>) {
        rows = [header]
        self.rightAligned = rightAligned
    }

    mutating func add(_ row: [String]) { rows.append(row) }

    func rendered() -> String {
        let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        let lines = rows.map { row in
            row.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                return rightAligned.contains(column) ? padding + cell : cell + padding
            }.joined(separator: "  ")
        }
        return lines.map { $0.trimmingTrailingSpaces() }.joined(separator: "\n")
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}

/// `value` rounded to an integer with thousands separators: 12,345.
func grouped(_ value: Double) -> String {
    guard value.isFinite else { return "n/a" }
    return grouped(Int(value.rounded()))
}

func grouped(_ value: Int) -> String {
    let digits = String(value.magnitude)
    var result = ""
    for (index, digit) in digits.enumerated() {
        if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
        result.append(digit)
    }
    return value < 0 ? "-" + result : result
}

/// `value` with a fixed number of decimals, without Foundation's locale-dependent formatting.
func format(_ value: Double, decimals: Int) -> String {
    guard value.isFinite else { return "n/a" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = Int((value * scale).rounded())
    let whole = scaled / Int(scale)
    let fraction = String(scaled % Int(scale))
    guard decimals > 0 else { return String(whole) }
    return "\(whole)." + String(repeating: "0", count: decimals - fraction.count) + fraction
}
