import Testing
import TokenVaultCore
import TokenVaultCrypto

/// Standard Webhooks signatures: the specification's own example, and the secret's form.
@Suite struct WebhookSignerTests {
    /// The example of the Standard Webhooks specification and its reference libraries.
    @Test func signsTheSpecificationsExample() throws {
        let signer = try WebhookSigner(secret: SecretBytes(utf8: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n"))
        let signature = signer.signature(
            messageID: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
            body: Array(#"{"test": 2432232314}"#.utf8))
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        let headers = signer.headers(messageID: "msg_1", timestamp: 7, body: [])
        #expect(headers.map(\.name) == ["webhook-id", "webhook-timestamp", "webhook-signature"])
        #expect(headers[1].value == "7")
    }

    @Test func refusesASecretNotInTheSpecificationsForm() {
        for bad in ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not base64!", "whsec_c2hvcnQ=", ""] {
            #expect(throws: VaultError.self, "\(bad)") { try WebhookSigner(secret: SecretBytes(utf8: bad)) }
        }
    }

    @Test func aNewSecretIsAccepted() throws {
        let secret = WebhookSigner.newSecret()
        #expect(secret.revealString().hasPrefix("whsec_"))
        let signer = try WebhookSigner(secret: secret)
        let other = try WebhookSigner(secret: WebhookSigner.newSecret())
        #expect(
            signer.signature(messageID: "m", timestamp: 1, body: [1])
                != other.signature(messageID: "m", timestamp: 1, body: [1]))
    }
}
