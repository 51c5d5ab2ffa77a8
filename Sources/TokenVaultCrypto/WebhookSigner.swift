import Crypto
import Foundation
import TokenVaultCore

/// Signs webhook deliveries the way Standard Webhooks specifies: `webhook-signature` is `v1,`
/// and the base64 HMAC-SHA256, under the endpoint's secret, of `webhook-id.webhook-timestamp.body`.
/// The secret is written as the specification's `whsec_` and base64 of 24 to 64 random bytes
/// (`tokenvault webhooks secret` makes one); HMAC is swift-crypto's.
public struct WebhookSigner: Sendable {
    private let key: SymmetricKey

    public static let prefix = "whsec_"

    /// `secret`: `whsec_<base64>` (surrounding white space ignored, so a file may end in a newline).
    public init(secret: SecretBytes) throws(VaultError) {
        let text = secret.revealString().trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix(Self.prefix), let bytes = Data(base64Encoded: String(text.dropFirst(Self.prefix.count))),
            (24...64).contains(bytes.count)
        else {
            throw VaultError.invalidField(
                "secret", "must be \(Self.prefix) followed by the base64 of 24 to 64 random bytes")
        }
        key = SymmetricKey(data: bytes)
    }

    /// The `webhook-signature` value for a delivery sent at `timestamp` (seconds since 1970).
    public func signature(messageID: String, timestamp: Int64, body: [UInt8]) -> String {
        var authenticator = HMAC<Crypto.SHA256>(key: key)
        authenticator.update(data: Array("\(messageID).\(timestamp).".utf8))
        authenticator.update(data: body)
        return "v1," + Data(authenticator.finalize()).base64EncodedString()
    }

    /// The three headers of a delivery, in the specification's names.
    public func headers(messageID: String, timestamp: Int64, body: [UInt8]) -> [(name: String, value: String)] {
        [
            ("webhook-id", messageID), ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", signature(messageID: messageID, timestamp: timestamp, body: body)),
        ]
    }

    /// A new secret in the specification's form: 32 random bytes.
    public static func newSecret() -> SecretBytes {
        SecretBytes(
            utf8: prefix + Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString())
    }
}
