import Testing
import TokenVaultCore
import TokenVaultCrypto

@Suite struct EnvelopeTests {
    let key = SodiumRandom.secret(count: 32)
    let plaintext = SecretBytes(utf8: "access-token-value")
    let ad = Array("tokenvault.credential.v1\u{0}ns/name\u{0}1\u{0}access_token".utf8)

    @Test func layoutIsVersionTermNonceCiphertext() throws {
        let envelope = Envelope.seal(plaintext, key: key, term: 0x0102_0304, associatedData: ad)
        #expect(envelope.count == 1 + 4 + 24 + plaintext.count + 16)
        #expect(envelope[0] == 1)
        #expect(Array(envelope[1..<5]) == [1, 2, 3, 4])
        #expect(try Envelope.term(of: envelope) == 0x0102_0304)
        #expect(!RawBytesSearch.contains(envelope, plaintext.revealBytes()))
        #expect(try Envelope.open(envelope, key: key, associatedData: ad) == plaintext)
    }

    @Test func everySealUsesAFreshNonce() {
        let first = Envelope.seal(plaintext, key: key, term: 1, associatedData: ad)
        let second = Envelope.seal(plaintext, key: key, term: 1, associatedData: ad)
        #expect(first[5..<29] != second[5..<29])
        #expect(first != second)
    }

    @Test func everyFlippedByteIsCaught() {
        let envelope = Envelope.seal(plaintext, key: key, term: 1, associatedData: ad)
        for index in envelope.indices {
            var tampered = envelope
            tampered[index] ^= 0x04
            #expect(throws: VaultError.self, "byte \(index)") {
                _ = try Envelope.open(tampered, key: key, associatedData: ad)
            }
        }
    }

    @Test func truncatedEnvelopeNamesTheProblem() {
        let envelope = Envelope.seal(plaintext, key: key, term: 1, associatedData: ad)
        for length in [0, 1, 5, 28, Envelope.overhead - 1] {
            #expect {
                _ = try Envelope.open(Array(envelope.prefix(length)), key: key, associatedData: ad)
            } throws: { error in
                (error as? VaultError)?.message.contains("truncated") == true
            }
        }
        #expect(throws: VaultError.self) {
            _ = try Envelope.open(Array(envelope.dropLast()), key: key, associatedData: ad)
        }
    }

    @Test func unknownVersionIsRefused() {
        var envelope = Envelope.seal(plaintext, key: key, term: 1, associatedData: ad)
        envelope[0] = 2
        #expect {
            _ = try Envelope.open(envelope, key: key, associatedData: ad)
        } throws: { ($0 as? VaultError)?.message.contains("version 2") == true }
    }

    @Test func otherAssociatedDataOrKeyFails() {
        let envelope = Envelope.seal(plaintext, key: key, term: 1, associatedData: ad)
        #expect(throws: VaultError.self) { _ = try Envelope.open(envelope, key: key, associatedData: ad + [0]) }
        #expect(throws: VaultError.self) {
            _ = try Envelope.open(envelope, key: SodiumRandom.secret(count: 32), associatedData: ad)
        }
    }
}

enum RawBytesSearch {
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }
}
