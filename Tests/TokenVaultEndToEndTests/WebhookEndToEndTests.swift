import Foundation
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// Webhooks with the built daemon and a loopback receiver: every event signed, an
/// endpoint down for a while, a daemon SIGKILLed between a change and its delivery, and an
/// endpoint that answers after a minute while refreshes go on. Waits are settings in seconds.
@Suite struct WebhookEndToEndTests {
    let directory = TemporaryDirectory("tokenvault-webhooks")
    let cli = CommandRunner()
    var dataDir: String { directory.file("data") }
    var socket: String { directory.file("tokenvault.sock") }
    var configPath: String { directory.file("config.json") }
    var clientSecret: String { directory.file("client.secret") }
    var webhookSecret: String { directory.file("hook.whsec") }

    init() throws {
        _ = try cli.run(["init", "--data-dir", dataDir])
        writeFile(clientSecret, Data("vault-secret".utf8), permissions: 0o600)
        // The secret as an operator makes it.
        let made = try cli.run(["webhooks", "secret", webhookSecret])
        #expect(made.status == 0, "\(made.stderr)")
    }

    var signer: WebhookSigner {
        get throws {
            try WebhookSigner(secret: SecretBytes(Array(FileManager.default.contents(atPath: webhookSecret)!)))
        }
    }

    func writeConfig(_ server: TestOAuthServer, receiver: String, retryFor: Int = 600, webhooks extra: String = "") {
        let config = """
            {"providers": {"idp": {"kind": "oauth2", "token_endpoint": "\(server.tokenURL)",
                                   "revocation_endpoint": "\(server.revocationURL)", "client_id": "vault-client",
                                   "client_secret_file": "\(clientSecret)", "timeout_seconds": 5,
                                   "limits": {"retry_base_seconds": 1, "retry_cap_seconds": 2, "breaker_failures": 1000}}},
             "limits": {"on_demand_refresh_seconds": 1},
             "webhooks": {"failing_after_seconds": 1, "retry_base_seconds": 1, "retry_cap_seconds": 2,
                          "retry_for_seconds": \(retryFor), \(extra)
                          "endpoints": {"test": {"url": "\(receiver)", "secret_file": "\(webhookSecret)"}}}}
            """
        writeFile(configPath, Data(config.utf8))
    }

    /// A loopback provider, a receiver answering as `mode` says, the configuration naming both,
    /// and the daemon on it.
    func start(
        _ mode: TestWebhookReceiver.Mode = .accept, retryFor: Int = 600, webhooks extra: String = ""
    ) async throws -> (TestOAuthServer, TestWebhookReceiver, DaemonProcess) {
        let server = try await TestOAuthServer.start()
        let receiver = try await TestWebhookReceiver(mode: mode)
        writeConfig(server, receiver: receiver.url, retryFor: retryFor, webhooks: extra)
        return (server, receiver, try startDaemon())
    }

    func startDaemon() throws -> DaemonProcess {
        try DaemonProcess(
            arguments: ["--data-dir", dataDir, "--config", configPath], socketPath: socket,
            logDirectory: directory.path, environment: ["TOKENVAULT_LOG_LEVEL": "info"])
    }

    func put(_ name: String, _ token: String) throws {
        let response = try UnixSocketHTTP.request(
            socket, "PUT", "/v1/credentials/w/\(name)", body: #"{"provider": "idp", "token": \#(token)}"#)
        #expect(response.status == 201 || response.status == 200, "\(response.text)")
    }

    /// A forced refresh, again while it is rate limited; its status.
    func refresh(_ name: String, expecting status: Int? = nil) async throws -> Int {
        try await timedRefresh(name, expecting: status).status
    }

    /// `refresh`, with how long the request that was not rate limited took; `expecting`: the
    /// status it must end with (checked here, with the answer in the message).
    func timedRefresh(_ name: String, expecting status: Int? = nil) async throws -> (status: Int, seconds: Double) {
        while true {
            let started = ContinuousClock.now
            let response = try UnixSocketHTTP.request(socket, "POST", "/v1/credentials/w/\(name)/refresh")
            let took = ContinuousClock.now - started
            guard response.status == 429 else {
                if let status { #expect(response.status == status, "refresh of w/\(name): \(response.text)") }
                return (response.status, Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)
            }
            try await Task.sleep(for: .milliseconds(250))
        }
    }

    func waitFor(_ receiver: TestWebhookReceiver, _ type: String, _ credential: String? = nil, count: Int = 1)
        async throws
    {
        let arrived = try await waitUntil(within: 30) {
            receiver.deliveries(of: type).filter { credential == nil || $0.credential == credential }.count >= count
        }
        #expect(arrived, "no \(type) for \(credential ?? "the vault"): \(receiver.deliveries.map(\.text))")
    }

    /// Every event type reaches the endpoint, signed as Standard Webhooks says, a credential's in
    /// the order they happened, and no payload holds a token.
    @Test func everyEventReachesTheEndpointSignedAndInOrder() async throws {
        let (server, receiver, daemon) = try await start()
        defer {
            daemon.terminate()
            Task { await server.shutdown() }
        }
        var tokens: [String] = []
        func issue() -> String {
            let issued = server.issue()
            tokens += [issued.accessToken, issued.refreshToken]
            return issued.responseJSON
        }

        try put("a", issue())
        server.script(.error(status: 503, code: "temporarily_unavailable"))
        _ = try await refresh("a", expecting: 502)
        try await waitFor(receiver, "credential.refresh_failing", "w/a")
        _ = try await refresh("a", expecting: 200)
        try await waitFor(receiver, "credential.recovered", "w/a")
        server.script(.error(status: 400, code: "invalid_grant"))
        #expect(try await refresh("a") != 200)
        try await waitFor(receiver, "credential.needs_reauth", "w/a")
        try put("a", issue())
        try await waitFor(receiver, "credential.recovered", "w/a", count: 2)
        // The revocation fails on every try of the DELETE, then the scheduler's retry succeeds.
        server.scriptRevocation(
            .error(status: 503, code: "temporarily_unavailable"), .error(status: 503, code: "temporarily_unavailable"),
            .error(status: 503, code: "temporarily_unavailable"))
        let deleting = try UnixSocketHTTP.request(socket, "DELETE", "/v1/credentials/w/a")
        #expect(deleting.status == 202, "\(deleting.text)")
        try await waitFor(receiver, "credential.revocation_failing", "w/a")
        try await waitFor(receiver, "credential.deleted", "w/a")
        // A token that cannot be refreshed, past its expiry.
        try put("e", #"{"access_token": "at-expiring-\#(UUID().uuidString)", "token_type": "Bearer", "expires_in": 1}"#)
        try await waitFor(receiver, "credential.expired", "w/e")
        let rotated = try cli.run(["rotate-key", "--data-dir", dataDir])
        #expect(rotated.status == 0, "\(rotated.stderr)")
        try await waitFor(receiver, "vault.key_rotated")

        let deliveries = receiver.deliveries
        // Device sign-ins' own events are delivered in DeviceSignInEndToEndTests.
        let signIns: Set<WebhookEvent.Kind> = [.authorized, .authorizationFailed]
        #expect(
            Set(deliveries.map(\.type))
                == Set(WebhookEvent.Kind.allCases.filter { !signIns.contains($0) }.map(\.rawValue)))
        let signer = try signer
        for delivery in deliveries {
            let expected = signer.signature(
                messageID: delivery.id, timestamp: Int64(delivery.timestamp) ?? 0, body: delivery.body)
            #expect(delivery.signature == expected, "\(delivery.type) is not signed with the endpoint's secret")
            #expect(delivery.id.hasPrefix("msg_"))
            #expect(abs((Double(delivery.timestamp) ?? 0) - delivery.at.timeIntervalSince1970) < 30)
        }
        #expect(
            deliveries.filter { $0.credential == "w/a" }.map(\.type) == [
                "credential.refresh_failing", "credential.recovered", "credential.needs_reauth", "credential.recovered",
                "credential.revocation_failing", "credential.revoked", "credential.deleted",
            ])
        let needsReauth = try #require(receiver.deliveries(of: "credential.needs_reauth").first)
        #expect(needsReauth.data["reason"] as? String == "invalid_grant", "\(needsReauth.text)")
        #expect(needsReauth.data["provider"] as? String == "idp")
        #expect(needsReauth.data["namespace"] as? String == "w")
        tokens += server.presentations.keys
        for token in tokens {
            for delivery in deliveries { #expect(!delivery.text.contains(token), "a payload holds a token") }
        }
        // A row goes once its answer came back, just after the receiver recorded it.
        var listed = ""
        let emptied = try await waitUntil(within: 10) {
            listed = try cli.run(["webhooks", "--data-dir", dataDir]).stdout
            return listed.contains("no webhook delivery is pending or failed")
        }
        #expect(emptied, "\(listed)")
    }

    /// An endpoint down for a while (its port closed): once it listens again every event arrives,
    /// each credential's in order, and the retries showed in `tokenvault webhooks` meanwhile.
    /// (Run by `ResilienceTests` below.)
    func anEndpointDownForAWhileGetsEverythingInOrderOnceBack() async throws {
        let (server, receiver, daemon) = try await start()
        defer {
            daemon.terminate()
            Task { await server.shutdown() }
        }
        await receiver.stop()
        let down = ContinuousClock.now
        let names = ["p", "q", "r"]
        for name in names {
            try put(name, server.issue().responseJSON)
            server.script(.error(status: 400, code: "invalid_grant"))
            #expect(try await refresh(name) != 200)
            try put(name, server.issue().responseJSON)
        }
        for name in names {
            #expect(try UnixSocketHTTP.request(socket, "DELETE", "/v1/credentials/w/\(name)?force=true").status < 300)
        }
        let retrying = try await waitUntil(within: 20) {
            let listed = try cli.run(["webhooks", "--data-dir", dataDir, "--json"]).stdout
            let rows = try JSONSerialization.jsonObject(with: Data(listed.utf8)) as? [[String: Any]] ?? []
            return rows.contains { ($0["attempts"] as? Int ?? 0) >= 2 && $0["state"] as? String == "pending" }
        }
        #expect(retrying, "the deliveries were not retried while the endpoint was down")
        try await Task.sleep(until: down + .seconds(Self.downSeconds))
        try await receiver.start()
        try await waitFor(receiver, "credential.deleted", count: names.count)
        for name in names {
            let types = receiver.deliveries.filter { $0.credential == "w/\(name)" }.map(\.type)
            #expect(
                types == [
                    "credential.needs_reauth", "credential.recovered", "credential.revoked", "credential.deleted",
                ],
                "w/\(name): \(types)")
        }
        let ids = receiver.deliveries.map(\.id)
        #expect(Set(ids).count == ids.count, "a delivery came twice")
    }

    /// How long the endpoint stays down in the test above (a minute, as the issue asks).
    static let downSeconds = 60.0

    /// The daemon SIGKILLed after the change committed and before the endpoint took its event:
    /// the next daemon delivers it.
    /// A delivery a request caused carries that request's trace context; one the scheduler
    /// caused (an expiry) carries none.
    @Test func aDeliveryCarriesTheTraceContextOfTheRequestThatCausedIt() async throws {
        let (server, receiver, daemon) = try await start()
        defer {
            daemon.terminate()
            Task { await server.shutdown() }
        }
        try put("t", server.issue().responseJSON)
        let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let deleting = try UnixSocketHTTP.request(
            socket, "DELETE", "/v1/credentials/w/t", headers: ["traceparent": trace])
        #expect(deleting.status < 300, "\(deleting.text)")
        try await waitFor(receiver, "credential.deleted", "w/t")
        let deleted = receiver.deliveries.first { $0.type == "credential.deleted" && $0.credential == "w/t" }
        #expect(deleted?.traceparent == trace, "\(String(describing: deleted?.traceparent))")
        try put("x", #"{"access_token": "at-expiring-\#(UUID().uuidString)", "token_type": "Bearer", "expires_in": 1}"#)
        try await waitFor(receiver, "credential.expired", "w/x")
        let expired = receiver.deliveries.first { $0.type == "credential.expired" && $0.credential == "w/x" }
        #expect(expired != nil && expired?.traceparent == nil)
    }

    @Test func anEventOfADaemonKilledBeforeDeliveryIsDeliveredAfterRestart() async throws {
        let server = try await TestOAuthServer.start()
        let receiver = try await TestWebhookReceiver(mode: .refuse(503))
        defer { Task { await server.shutdown() } }
        writeConfig(server, receiver: receiver.url)
        let first = try startDaemon()
        try put("k", server.issue().responseJSON)
        #expect(try UnixSocketHTTP.request(socket, "DELETE", "/v1/credentials/w/k?force=true").status < 300)
        let tried = try await waitUntil(within: 30) { receiver.requests >= 2 }
        #expect(tried)
        first.kill()
        receiver.mode = .accept
        // A request the killed daemon had sent may still be read (and taken) after the switch, as
        // CI saw once: it arrives in the pause, while the killed daemon never heard its 2xx.
        try await Task.sleep(for: .milliseconds(300))
        let restarted = Date()
        let second = try startDaemon()
        defer { second.terminate() }
        let redelivered = try await waitUntil(within: 30) {
            ["credential.revoked", "credential.deleted"].allSatisfy { type in
                receiver.deliveries(of: type).contains { $0.at >= restarted }
            }
        }
        #expect(redelivered, "\(receiver.deliveries.map { "\($0.type) \($0.at)" })")
        // Delivery is at least once: an event taken twice carries one webhook-id, by which the
        // receiver drops the repeat.
        for type in ["credential.revoked", "credential.deleted"] {
            let ids = Set(receiver.deliveries(of: type).map(\.id))
            #expect(ids.count == 1, "\(type): \(ids)")
        }
    }

    /// A delivery that failed for the whole retry period is dead-lettered, listed as failed, and
    /// sent again by `tokenvault webhooks redeliver`.
    @Test func aDeadLetteredDeliveryIsListedAndRedelivered() async throws {
        let (server, receiver, daemon) = try await start(.refuse(500), retryFor: 2)
        defer {
            daemon.terminate()
            Task { await server.shutdown() }
        }
        try put("d", server.issue().responseJSON)
        #expect(try UnixSocketHTTP.request(socket, "DELETE", "/v1/credentials/w/d?force=true").status == 204)
        var failed: [[String: Any]] = []
        let dead = try await waitUntil(within: 20) {
            let listed = try cli.run(["webhooks", "--data-dir", dataDir, "--state", "failed", "--json"]).stdout
            failed = try JSONSerialization.jsonObject(with: Data(listed.utf8)) as? [[String: Any]] ?? []
            return failed.count == 2
        }
        #expect(dead, "\(failed)")
        #expect(failed.allSatisfy { ($0["last_error"] as? String) == "HTTP 500" }, "\(failed)")
        #expect(daemon.log.contains("dead-lettered"))
        let metrics = try UnixSocketHTTP.request(socket, "GET", "/metrics").text
        #expect(metrics.contains(#"tokenvault_webhook_deliveries_total{outcome="dead_lettered"} 2"#), "\(metrics)")
        #expect(try cli.run(["webhooks", "redeliver", "--data-dir", dataDir]).status != 0, "nothing named")
        receiver.mode = .accept
        let first = try #require(failed.first?["id"] as? Int)
        let one = try cli.run(["webhooks", "redeliver", "\(first)", "--data-dir", dataDir])
        #expect(one.status == 0 && one.stdout.contains("1 delivery queued again"), "\(one.stdout)\(one.stderr)")
        try await waitFor(receiver, "credential.revoked", "w/d")
        let rest = try cli.run(["webhooks", "redeliver", "--all-failed", "--data-dir", dataDir])
        #expect(rest.status == 0 && rest.stdout.contains("1 delivery queued again"), "\(rest.stdout)\(rest.stderr)")
        try await waitFor(receiver, "credential.deleted", "w/d")
        #expect(receiver.deliveries.map(\.type) == ["credential.revoked", "credential.deleted"])
    }

    /// SIGHUP puts a new endpoint in force for the next change; a file naming a secret that does
    /// not open is refused with its key, and the endpoints in force go on.
    @Test func anEndpointAddedBySIGHUPHearsTheNextChange() async throws {
        let server = try await TestOAuthServer.start()
        let first = try await TestWebhookReceiver()
        let added = try await TestWebhookReceiver()
        defer { Task { await server.shutdown() } }
        writeConfig(server, receiver: first.url)
        let daemon = try startDaemon()
        defer { daemon.terminate() }
        func reload(_ count: Int) async throws {
            #expect(try await daemon.reload(count: count), "reload \(count) not logged: \(daemon.log)")
        }
        let config = try String(contentsOfFile: configPath, encoding: .utf8)
        let endpoint = #""test": {"url": "\#(first.url)", "secret_file": "\#(webhookSecret)"}"#
        func write(_ extra: String) {
            writeFile(configPath, Data(config.replacingOccurrences(of: endpoint, with: endpoint + extra).utf8))
        }
        write(#", "added": {"url": "\#(added.url)", "secret_file": "\#(webhookSecret)"}"#)
        try await reload(1)
        try put("h1", server.issue().responseJSON)
        #expect(try UnixSocketHTTP.request(socket, "DELETE", "/v1/credentials/w/h1?force=true").status == 204)
        try await waitFor(added, "credential.deleted", "w/h1")
        try await waitFor(first, "credential.deleted", "w/h1")

        write(#", "broken": {"url": "\#(added.url)", "secret_file": "\#(directory.file("missing.whsec"))"}"#)
        try await reload(2)
        #expect(daemon.log.contains("webhooks.endpoints.broken.secret_file"), "\(daemon.log)")
        try put("h2", server.issue().responseJSON)
        #expect(try UnixSocketHTTP.request(socket, "DELETE", "/v1/credentials/w/h2?force=true").status == 204)
        try await waitFor(added, "credential.deleted", "w/h2")
    }

    /// `rotate-key` without a daemon writes its event to the outbox with the configuration's
    /// routes; the next daemon delivers it.
    @Test func aRotationWithoutADaemonIsDeliveredByTheNextOne() async throws {
        let server = try await TestOAuthServer.start()
        let receiver = try await TestWebhookReceiver()
        defer { Task { await server.shutdown() } }
        writeConfig(server, receiver: receiver.url)
        let rotated = try cli.run(["rotate-key", "--data-dir", dataDir, "--config", configPath])
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let listed = try cli.run(["webhooks", "list", "--data-dir", dataDir, "--state", "pending"])
        #expect(listed.stdout.contains("vault.key_rotated"), "\(listed.stdout)")
        let daemon = try startDaemon()
        defer { daemon.terminate() }
        try await waitFor(receiver, "vault.key_rotated")
        #expect(receiver.deliveries(of: "vault.key_rotated").first?.data["key_term"] as? Int == 2)
    }

    /// An endpoint that answers after a minute: refreshes take as long as without it, while its
    /// deliveries wait (each endpoint has its own slots; refreshes only write outbox rows).
    @Test func anEndpointAnsweringAfterAMinuteDoesNotSlowRefreshes() async throws {
        let (server, receiver, daemon) = try await start(
            .hold(60), webhooks: #""timeout_seconds": 90, "max_concurrent_deliveries": 2,"#)
        defer {
            daemon.terminate()
            Task { await server.shutdown() }
        }
        let names = (0..<12).map { "s\($0)" }
        for name in names { try put(name, server.issue().responseJSON) }
        func timedRefreshes() async throws -> [Double] {
            var seconds: [Double] = []
            for name in names {
                seconds.append(try await timedRefresh(name, expecting: 200).seconds)
            }
            return seconds.sorted()
        }
        let before = try await timedRefreshes()
        // Every refresh now announces: each credential fails once (a delayed, then due,
        // refresh_failing) and recovers, so deliveries pile up behind the slow endpoint.
        for name in names {
            server.script(.error(status: 503, code: "temporarily_unavailable"))
            _ = try await refresh(name)
        }
        let held = try await waitUntil(within: 15) { receiver.deliveries.count >= 2 }
        #expect(held, "no delivery reached the slow endpoint")
        let during = try await timedRefreshes()
        print(
            "slow endpoint: refresh p50 \(before[before.count / 2]) s, max \(before.last!) s without deliveries held; "
                + "p50 \(during[during.count / 2]) s, max \(during.last!) s with \(receiver.deliveries.count) held")
        // Far below the endpoint's minute, however loaded the machine (the numbers above are the
        // measurement; a refresh that waited for a delivery would take a minute).
        #expect(during.last! < 10, "a refresh waited for the webhook endpoint")
        // A third may arrive once the first held one is answered, a minute after it arrived.
        if let firstHeld = receiver.deliveries.first?.at, Date().timeIntervalSince(firstHeld) < 55 {
            #expect(receiver.deliveries.count <= 2, "more deliveries in flight than the endpoint's slots")
        }
    }
}

extension WebhookEndToEndTests {
    /// The minute-long test runs in `make test`'s resilience phase, beside the others of its
    /// length, not in the end-to-end phase, which it would double.
    @Suite struct ResilienceTests {
        let outer: WebhookEndToEndTests

        init() throws { outer = try WebhookEndToEndTests() }

        @Test func anEndpointDownForAMinuteGetsEverythingInOrderOnceBack() async throws {
            try await outer.anEndpointDownForAWhileGetsEverythingInOrderOnceBack()
        }
    }
}
