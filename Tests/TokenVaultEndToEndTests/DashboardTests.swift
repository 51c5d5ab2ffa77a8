import Foundation
import Testing
import TokenVaultTesting

/// The Grafana dashboard shipped beside the alert rules (`packaging/grafana`) queries only what a
/// live daemon exports: a daemon that has refreshed, served tokens, proxied a call and refused a
/// sign-in is scraped, and every metric a panel names must be in its answer.
@Suite struct DashboardTests {
    static let file = PackagingTests.repository + "/packaging/grafana/tokenvault-dashboard.json"

    /// Exported on a PostgreSQL vault only (`ScaleOutLeaseTests` scrapes the clock's).
    static let postgresOnly: Set<String> = ["tokenvault_clock_offset_seconds", "tokenvault_change_feed_connected"]

    static func panels() throws -> [[String: Any]] {
        let document = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file)))
        let dashboard = try #require(document as? [String: Any])
        return try #require(dashboard["panels"] as? [[String: Any]]).filter { $0["type"] as? String != "row" }
    }

    @Test func everyPanelQueriesPrometheusThroughTheChosenDataSource() throws {
        let panels = try Self.panels()
        #expect(panels.count >= 15)
        for panel in panels {
            let title = panel["title"] as? String ?? "?"
            let targets = panel["targets"] as? [[String: Any]] ?? []
            #expect(!targets.isEmpty, "\(title) has no query")
            for target in targets {
                #expect((target["expr"] as? String)?.contains("tokenvault_") == true, "\(title): \(target)")
                #expect((target["datasource"] as? [String: Any])?["uid"] as? String == "${datasource}", "\(title)")
            }
        }
    }

    @Test func everyMetricAPanelQueriesIsExportedByALiveDaemon() async throws {
        let harness = try await ResilienceHarness(
            lifetime: 3, limits: #"{"concurrency": 8, "rate_per_second": 100, "burst": 100}"#,
            refresh: #"{"lifetime_share": 0.5, "margin_seconds": 1, "jitter": 0.1}"#)
        // The test server is also the upstream of a proxied call.
        var config = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: harness.configPath)))
                as? [String: Any])
        var providers = try #require(config["providers"] as? [String: Any])
        var idp = try #require(providers["idp"] as? [String: Any])
        idp["api_base_urls"] = [harness.server.baseURL]
        providers["idp"] = idp
        config["providers"] = providers
        try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: harness.configPath))
        let daemon = try harness.startDaemon()
        defer { daemon.terminate() }
        try harness.seed(3)
        #expect(try await waitUntil(within: 30) { harness.server.successfulRefreshes >= 3 })
        let name = ResilienceHarness.name(0)
        #expect(try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/\(name)/token").status == 200)
        let proxied = try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/\(name)/proxy/anything")
        #expect(proxied.status < 500, "\(proxied.status) \(proxied.text)")
        let refused = try UnixSocketHTTP.request(
            harness.socket, "POST", "/v1/credentials/\(name)/authorization/callback",
            body: #"{"code": "c", "state": "never-started"}"#)
        #expect(refused.status >= 400)
        let metrics = try UnixSocketHTTP.request(harness.socket, "GET", "/metrics").text
        let exported = Set(
            metrics.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
                $0.prefixMatch(of: #/tokenvault_[a-z_]+/#).map { String($0.output) }
            })
        var queried: Set<String> = []
        for panel in try Self.panels() {
            for target in panel["targets"] as? [[String: Any]] ?? [] {
                let expr = target["expr"] as? String ?? ""
                queried.formUnion(expr.matches(of: #/tokenvault_[a-z_]+/#).map { String($0.output) })
            }
        }
        #expect(queried.count >= 20, "\(queried.sorted())")
        let missing = queried.subtracting(Self.postgresOnly).subtracting(exported)
        #expect(missing.isEmpty, "panels query \(missing.sorted()), which the daemon does not export")
    }
}
