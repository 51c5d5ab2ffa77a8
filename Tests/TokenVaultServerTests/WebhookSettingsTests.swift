import Foundation
import Testing
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

@testable import TokenVaultServer

/// The `webhooks` section: endpoints, their filters, the numbers, and errors that name the key.
extension DaemonConfigurationTests {
    @Test func webhookEndpointsAndNumbersAreRead() throws {
        let config = try load(
            """
            {"webhooks": {"failing_after_seconds": 60, "retry_for_seconds": 3600, "timeout_seconds": 10,
              "endpoints": {
                "signin": {"url": "https://backend.example/hooks", "secret_file": "/etc/tv/signin.whsec",
                           "events": ["credential.needs_reauth", "credential.recovered"], "namespaces": ["pay"]},
                "ops": {"url": "http://127.0.0.1:9000/hooks", "secret_file": "/etc/tv/ops.whsec", "ca_file": "/etc/ca.pem",
                        "trust_system_roots": true}
              }}}
            """)
        let webhooks = config.webhooks
        #expect(webhooks.endpoints.map(\.name) == ["ops", "signin"])
        #expect(webhooks.endpoints[1].events == [.needsReauth, .recovered])
        #expect(webhooks.endpoints[1].namespaces == ["pay"])
        #expect(webhooks.endpoints[0].events == nil && webhooks.endpoints[0].caFile == "/etc/ca.pem")
        #expect(webhooks.endpoints[0].trustsSystemRoots && !webhooks.endpoints[1].trustsSystemRoots)
        #expect(webhooks.routes.failingAfterSeconds == 60)
        #expect(webhooks.retry == WebhookRetry(baseSeconds: 5, capSeconds: 3600, periodSeconds: 3600))
        #expect(webhooks.timeoutSeconds == 10)
        #expect(try load("{}").webhooks.endpoints.isEmpty)
    }

    @Test func webhookMistakesNameTheirKey() {
        let cases: [(String, String)] = [
            (#"{"webhooks": {"endpoints": {"a": {"secret_file": "/s"}}}}"#, "webhooks.endpoints.a.url"),
            (#"{"webhooks": {"endpoints": {"a": {"url": "https://x.example"}}}}"#, "webhooks.endpoints.a.secret_file"),
            (
                #"{"webhooks": {"endpoints": {"a": {"url": "https://x", "secret_file": "/s", "events": ["credential.gone"]}}}}"#,
                "webhooks.endpoints.a.events"
            ),
            (
                #"{"webhooks": {"endpoints": {"a": {"url": "https://x", "secret_file": "/s", "colour": "red"}}}}"#,
                "webhooks.endpoints.a.colour"
            ),
            (
                #"{"webhooks": {"endpoints": {"a b": {"url": "https://x", "secret_file": "/s"}}}}"#,
                "webhooks.endpoints.a b"
            ),
            (
                #"{"webhooks": {"endpoints": {"a": {"url": "https://x", "secret_file": "/s", "trust_system_roots": true}}}}"#,
                "webhooks.endpoints.a.trust_system_roots"
            ),
            (#"{"webhooks": {"retry_for_seconds": 0}}"#, "webhooks.retry_for_seconds"),
            (#"{"webhooks": {"interval": 3}}"#, "webhooks.interval"),
        ]
        for (json, key) in cases {
            #expect(error(json).contains(key), "\(json): \(error(json))")
        }
    }
}
