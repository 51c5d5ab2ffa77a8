import Testing
import TokenVaultCore

@Suite struct SecretBytesTests {
    let secret = SecretBytes(utf8: "super-secret-token-value")

    @Test func everyTextualFormIsRedacted() {
        var dumped = ""
        dump(secret, to: &dumped)
        let forms = [
            secret.description, secret.debugDescription, "\(secret)", String(describing: secret),
            String(reflecting: secret), dumped, "\(Mirror(reflecting: secret).children.map { "\($0.value)" })",
            "\(CredentialSecrets(accessToken: secret, refreshToken: secret))",
        ]
        for form in forms {
            #expect(!form.contains("super-secret"), "leaked in: \(form)")
            #expect(form.contains("redacted"))
        }
    }

    @Test func onlyExplicitCallsReveal() {
        #expect(secret.revealString() == "super-secret-token-value")
        #expect(secret.revealBytes() == Array("super-secret-token-value".utf8))
        #expect(secret.count == 24)
    }

    @Test func equalityComparesContents() {
        #expect(secret == SecretBytes(utf8: "super-secret-token-value"))
        #expect(secret != SecretBytes(utf8: "super-secret-token-valuX"))
        #expect(secret != SecretBytes(utf8: "super-secret"))
        #expect(SecretBytes([]) == SecretBytes([]))
    }

    @Test func largeAndManySecretsRoundTrip() {
        let big = SecretBytes((0..<200_000).map { UInt8(truncatingIfNeeded: $0) })
        #expect(big.revealBytes().count == 200_000)
        #expect(big.revealBytes()[199_999] == UInt8(truncatingIfNeeded: 199_999))
        var many: [SecretBytes] = []
        for index in 0..<5_000 { many.append(SecretBytes(utf8: "token-\(index)")) }
        #expect(many[4_321].revealString() == "token-4321")
        many.removeAll()
        // Blocks are reused after release and come back zero-filled for a new secret.
        let reused = SecretBytes(count: 16) { buffer in #expect(buffer.allSatisfy { $0 == 0 }) }
        #expect(reused.count == 16)
    }
}
