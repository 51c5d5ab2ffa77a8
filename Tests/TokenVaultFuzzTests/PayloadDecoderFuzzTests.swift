import Foundation
import PropertyBased
import Testing
import TokenVaultCore

/// The token payload decoder on input from outside (a `PUT` body, an exchange's answer): it
/// either returns a payload whose every time and size is in range, one the next generation can
/// be computed from without a trap, or throws a 400-class `VaultError` naming the problem.
@Suite struct PayloadDecoderFuzzTests {
    /// Members the decoder reads, and values that stress them.
    static let members = [
        "access_token", "accessToken", "refresh_token", "refreshToken", "id_token", "idToken", "token_type",
        "expires_in", "expirationTimeout", "expires_at", "scope", "refresh_token_expires_in", "refresh_in",
        "verify_token", "expired", "other",
    ]
    static let values = [
        "1e300", "-1e300", "1e400", "-1e400", "1e-300", "0", "-0", "-1", "0.5", "3600", "9223372036854775807",
        "9223372036854775808", "-9223372036854775809", "99999999999999999999999999", "1.7976931348623157e308",
        "253402300800", "253402300800000", "-62135596801", "\"1e300\"", "\"NaN\"", "\"inf\"", "\"-5\"", "\"3600\"",
        "\"99999-01-01T00:00:00Z\"", "\"2026-13-45T25:61:61Z\"", "\"0000-01-01T00:00:00Z\"",
        "\"2026-11-24T00:00:00.123456789Z\"", "\"a\"", "\"\"", "null", "true", "[]", "[\"a\", 1]", "{}",
        "{\"a\": [1, {\"b\": null}]}", "\"\\u0000\\u001b\"",
    ]

    /// A JSON object of 1-6 members drawn from the lists, as text (so number literals no Double
    /// holds reach the JSON parser as they would from a client).
    static let objects: Generator<[UInt8], Shrink.None<[UInt8]>> = Generator { rng in
        let count = Int.random(in: 1...6, using: &rng)
        let pairs = (0..<count).map { _ in
            let name = members[Int.random(in: 0..<members.count, using: &rng)]
            let value =
                Int.random(in: 0..<10, using: &rng) == 0
                ? "\"" + String(repeating: "t", count: Int.random(in: 8_000...20_000, using: &rng)) + "\""
                : values[Int.random(in: 0..<values.count, using: &rng)]
            return "\"\(name)\": \(value)"
        }
        return Array(("{" + pairs.joined(separator: ", ") + "}").utf8)
    }

    @Test func theSeedCorpusDecodesOrIsRefused() {
        let corpus = FuzzCorpus.inputs("payload")
        #expect(corpus.count > 20)
        for (name, bytes) in corpus { Self.check(bytes, label: name) }
    }

    @Test func generatedObjectsDecodeOrAreRefused() async {
        await propertyCheck(count: FuzzBudget.count, input: Self.objects) { Self.check($0, label: "generated") }
    }

    @Test func mutatedCorpusInputsDecodeOrAreRefused() async {
        let seeds = FuzzCorpus.inputs("payload").map(\.bytes)
        await propertyCheck(count: FuzzBudget.count, input: Mutator.generator(seeds: seeds)) {
            Self.check($0, label: "mutated")
        }
    }

    static func check(_ bytes: [UInt8], label: String) {
        for unit in ExpiredUnit.allCases {
            let decoder = TokenPayloadDecoder(expiredUnit: unit)
            do {
                let payload = try decoder.decode(bytes)
                checkInvariants(payload, sizes: decoder.sizes, label: "\(label) (\(unit))")
            } catch let error as VaultError {
                #expect(
                    [.invalidPayload, .invalidField].contains(error.code),
                    "\(label): refused with \(error.code), not a 400")
            } catch {
                Issue.record("\(label): threw \(error), not a VaultError")
            }
        }
    }

    /// What every accepted payload must satisfy, and a next generation computed from it.
    static func checkInvariants(_ payload: TokenPayload, sizes: TokenSizeLimits, label: String) {
        func inRange(_ expiry: TokenPayload.Expiry) -> Bool {
            switch expiry {
            case .unknown: true
            case .after(let seconds):
                // 0: under a second (an EBS verify token that expires as it arrives).
                seconds.isFinite && seconds >= 0 && seconds <= TokenPayloadDecoder.maximumLifetimeSeconds
            case .at(let time): time >= .earliest && time <= .latest
            }
        }
        #expect(inRange(payload.expiry), "\(label): expiry \(payload.expiry)")
        #expect(inRange(payload.refreshTokenExpiry), "\(label): refresh token expiry \(payload.refreshTokenExpiry)")
        if let refreshIn = payload.refreshIn { #expect(refreshIn.isFinite && refreshIn >= 0, "\(label): refresh_in") }
        #expect(payload.secrets.accessToken.count <= sizes.accessToken, "\(label): access token size")
        #expect((payload.secrets.refreshToken?.count ?? 0) <= sizes.refreshToken, "\(label): refresh token size")
        #expect((payload.secrets.idToken?.count ?? 0) <= sizes.idToken, "\(label): id token size")
        // The next generation is where lifetimes become times: it must not trap either, at the
        // ends of the calendar included.
        for now in [Timestamp.now(), Timestamp.earliest, Timestamp.latest] {
            let next = NextGeneration(
                previous: nil, payload: payload, succession: .replacement(provider: "p", labels: [:]),
                id: try! CredentialID("fuzz/payload"), issuedAt: now, now: now, planner: RefreshPlanner(), jitter: 0.99)
            if let expiresAt = next.metadata.expiresAt {
                #expect(expiresAt >= .earliest && expiresAt <= .latest, "\(label): expires_at \(expiresAt)")
            }
        }
    }
}
