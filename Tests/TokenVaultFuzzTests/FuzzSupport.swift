import Foundation
import PropertyBased

/// What the fuzz tests share: the checked-in seed corpus, the run's budget and a byte mutator.
///
/// Every test first runs each corpus file of its directory (the reproducers of past crashes
/// and the odd shapes seen in the wild), then `FuzzBudget.count` generated inputs. A failing
/// generated input is reported with a `.fixedSeed(...)` to reproduce it; add it to the corpus.
enum FuzzCorpus {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Corpus")

    /// The files of `Corpus/<directory>`, by name, as bytes.
    static func inputs(_ directory: String) -> [(name: String, bytes: [UInt8])] {
        let folder = root.appendingPathComponent(directory)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().compactMap { name in
            FileManager.default.contents(atPath: folder.appendingPathComponent(name).path).map { (name, Array($0)) }
        }
    }
}

enum FuzzBudget {
    /// Generated inputs per property: small enough for `make test` (a few seconds per target),
    /// raised for a longer local run with `TOKENVAULT_FUZZ_COUNT=100000 swift test --filter Fuzz`.
    static let count = ProcessInfo.processInfo.environment["TOKENVAULT_FUZZ_COUNT"].flatMap(Int.init) ?? 400
}

/// Byte-level mutations of a seed: what a broken or hostile peer does to a well-formed input.
enum Mutator {
    /// Bytes parsers treat specially.
    static let interesting: [UInt8] = [
        0, 0x09, 0x0A, 0x0D, 0x20, 0x22, 0x2B, 0x2C, 0x2D, 0x2E, 0x30, 0x31, 0x39, 0x3A,
        0x45, 0x5B, 0x5C, 0x5D, 0x65, 0x7B, 0x7D, 0x7F, 0x80, 0xC0, 0xFF,
    ]
    /// Fragments parsers treat specially.
    static let fragments: [[UInt8]] = [
        "\r\n", "\n", "\r\n\r\n", ": ", "1e300", "-1", "99999999999999999999", "\"", "\\u0000", "\\ud800", "null",
        "Content-Length: 5\r\n", "Transfer-Encoding: chunked\r\n", " ", "\t", "0x10", "NaN",
    ].map { Array($0.utf8) }

    /// A seed from `seeds` with 0-4 random mutations.
    static func generator(seeds: [[UInt8]]) -> Generator<[UInt8], Shrink.None<[UInt8]>> {
        Generator { rng in
            var bytes = seeds.isEmpty ? [] : seeds[Int.random(in: 0..<seeds.count, using: &rng)]
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                mutate(&bytes, using: &rng)
            }
            return bytes
        }
    }

    static func mutate(_ bytes: inout [UInt8], using rng: inout some RandomNumberGenerator) {
        let position = bytes.isEmpty ? 0 : Int.random(in: 0...bytes.count, using: &rng)
        switch Int.random(in: 0..<7, using: &rng) {
        case 0 where position < bytes.count: bytes[position] ^= UInt8(1 << Int.random(in: 0..<8, using: &rng))
        case 1: bytes.insert(interesting[Int.random(in: 0..<interesting.count, using: &rng)], at: position)
        case 2: bytes.insert(contentsOf: fragments[Int.random(in: 0..<fragments.count, using: &rng)], at: position)
        case 3 where position < bytes.count:
            bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...8, using: &rng)))
        case 4: bytes.removeSubrange(position...)
        case 5 where position < bytes.count:
            let end = min(bytes.count, position + Int.random(in: 1...16, using: &rng))
            bytes.insert(contentsOf: bytes[position..<end], at: end)
        default: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: position)
        }
    }
}
