import Foundation
import TokenVaultCore

/// POSTs webhook deliveries to one endpoint, signed, through a `DirectTransport`: the same
/// transport rule (HTTPS, or plain HTTP to this machine only), TLS settings (`ca_file`),
/// connect and read timeouts and no redirects as a provider's token calls. The body is the
/// outbox row's payload as stored; the signature is made at each attempt, with its time.
public final class WebhookSender: WebhookSending {
    /// Standard Webhooks' three headers for a body sent now (`WebhookSigner.headers`).
    public typealias Sign =
        @Sendable (_ messageID: String, _ timestamp: Int64, _ body: [UInt8]) -> [(
            name: String, value: String
        )]

    public let url: String
    private let transport: DirectTransport
    private let sign: Sign

    /// `key`: where the URL was configured, for the error.
    public init(url: String, settings: TransportSettings, key: String, sign: @escaping Sign)
        throws(ProviderConfigurationError)
    {
        switch EndpointURL.validate(url) {
        case .success(let endpoint): self.url = endpoint.description
        case .failure(let problem): throw ProviderConfigurationError(key: key, problem: problem.problem)
        }
        transport = DirectTransport(settings: settings)
        self.sign = sign
    }

    /// An endpoint's signing secret, read as provider secrets are (a private file, into locked
    /// memory); `key` names the setting in the error.
    public static func secret(file: String, key: String) throws(ProviderConfigurationError) -> SecretBytes {
        switch SecretFile.read(file) {
        case .success(let secret): return secret
        case .failure(let problem): throw ProviderConfigurationError(key: key, problem: problem.problem)
        }
    }

    public func send(_ delivery: WebhookDelivery) async -> WebhookAttempt {
        let timestamp = Int64(Date().timeIntervalSince1970)
        var headers = [
            HeaderField(name: "Content-Type", value: "application/json"),
            HeaderField(name: "User-Agent", value: "tokenvault"),
        ]
        headers += sign(delivery.messageID, timestamp, delivery.payload).map {
            HeaderField(name: $0.name, value: $0.value)
        }
        // The trace context of the request that caused it: the receiver's work joins that trace.
        if let traceparent = delivery.traceparent {
            headers.append(HeaderField(name: "traceparent", value: traceparent))
        }
        do {
            let answer = try await transport.send(
                PreparedRequest(method: "POST", url: url, headers: headers, body: delivery.payload), call: nil)
            guard (200..<300).contains(answer.status) else {
                let retryAfter = answer.headers["retry-after"].flatMap { RetryAfter.seconds($0, now: Date()) }
                return .failed(reason: "HTTP \(answer.status)", retryAfter: retryAfter)
            }
            return .delivered
        } catch {
            return .failed(reason: "\(error.code)", retryAfter: nil)
        }
    }

    /// Closes the connections. Safe to call more than once.
    public func shutdown() async { try? await transport.shutdown() }
}
