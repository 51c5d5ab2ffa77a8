import Foundation
import PropertyBased
import Testing
import TokenVaultCore

@testable import TokenVaultProviders

/// What a provider answers, read as the engine reads it: a token response becomes a payload in
/// range or a classified failure; any other status becomes a classified failure whose
/// `Retry-After` is at most a day; the refresh token sent never appears in the text kept.
@Suite struct ProviderResponseFuzzTests {
    static let secret = "rt-Secret-Value-0123456789"
    static let statuses = [200, 201, 204, 400, 401, 403, 404, 409, 429, 500, 502, 503]

    static var retryAfterSeeds: [String] {
        FuzzCorpus.inputs("retry-after").map { String(decoding: $0.bytes, as: UTF8.self) }
    }

    /// Status, Retry-After (absent or a seed, mutated) and body (a corpus answer, mutated, now
    /// and then echoing the refresh token).
    static var answers: Generator<(Int, String?, [UInt8]), Shrink.None<(Int, String?, [UInt8])>> {
        let bodies = Mutator.generator(seeds: FuzzCorpus.inputs("response").map(\.bytes))
        let retryAfters = Mutator.generator(seeds: retryAfterSeeds.map { Array($0.utf8) })
        return Generator { rng in
            let status = statuses[Int.random(in: 0..<statuses.count, using: &rng)]
            let retryAfter =
                Bool.random(using: &rng) ? String(decoding: retryAfters.run(using: &rng), as: UTF8.self) : nil
            var body = bodies.run(using: &rng)
            if Int.random(in: 0..<4, using: &rng) == 0 {
                body = Array(#"{"error":"invalid_grant","error_description":"token \#(secret) is spent"}"#.utf8)
            }
            return (status, retryAfter, body)
        }
    }

    @Test func theSeedCorpusIsReadOrClassified() {
        for (name, body) in FuzzCorpus.inputs("response") {
            for status in Self.statuses {
                for retryAfter in [nil] + Self.retryAfterSeeds {
                    Self.check(status: status, retryAfter: retryAfter, body: body, label: "\(name) \(status)")
                }
            }
        }
    }

    @Test func generatedAnswersAreReadOrClassified() async {
        await propertyCheck(count: FuzzBudget.count, input: Self.answers) { answer in
            Self.check(status: answer.0, retryAfter: answer.1, body: answer.2, label: "generated")
        }
    }

    @Test func retryAfterIsADayAtMost() async {
        for seed in Self.retryAfterSeeds { Self.checkRetryAfter(seed) }
        let generator = Mutator.generator(seeds: Self.retryAfterSeeds.map { Array($0.utf8) })
        await propertyCheck(count: FuzzBudget.count, input: generator) {
            Self.checkRetryAfter(String(decoding: $0, as: UTF8.self))
        }
    }

    static func checkRetryAfter(_ text: String) {
        for now in [Date(), Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 253_402_300_799)] {
            if let seconds = RetryAfter.seconds(text, now: now) {
                #expect(
                    seconds.isFinite && (0...RetryAfter.maximum).contains(seconds), "Retry-After \(text): \(seconds)")
            }
        }
    }

    static func check(status: Int, retryAfter: String?, body: [UInt8], label: String) {
        let headers = retryAfter.map { ["Retry-After": $0] } ?? [:]
        let secrets = [SecretBytes(utf8: secret)]
        let failure: ProviderFailure
        if (200..<300).contains(status) {
            do {
                let payload = try TokenResponseReader.read(
                    status: status, headers: headers, body: body, now: Date(), redacting: secrets)
                PayloadDecoderFuzzTests.checkInvariants(payload, sizes: TokenSizeLimits(), label: label)
                return
            } catch {
                failure = error
            }
        } else {
            failure = ProviderErrorClassifier.classify(
                status: status, headers: headers, body: body, now: Date(), redacting: secrets)
        }
        if let seconds = failure.retryAfter {
            #expect(seconds.isFinite && (0...RetryAfter.maximum).contains(seconds), "\(label): retry after \(seconds)")
        }
        #expect((0...86_400).contains(failure.retryAfterWholeSeconds ?? 0))
        #expect(!failure.message.contains(secret) && !failure.code.rawValue.contains(secret), "\(label): the secret leaked")
        #expect(
            !(failure.message + failure.code.rawValue).unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F },
            "\(label): control characters kept: \(failure.message.debugDescription)")
    }
}
