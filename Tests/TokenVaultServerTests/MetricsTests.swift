import Testing
import TokenVaultCore

@testable import TokenVaultServer

/// The engine keeps running totals; /metrics exports them as Prometheus counters (`_total`,
/// TYPE counter) that equal those totals and never go down.
@Suite struct MetricsTests {
    static func scrape(_ metrics: APIMetrics, _ counters: RefreshCounters) -> String {
        String(decoding: metrics.exposition(credentialsByStatus: [:], refresh: counters), as: UTF8.self)
    }

    @Test func refreshTotalsAreCountersThatFollowTheEngine() {
        let metrics = APIMetrics()
        var counters = RefreshCounters()
        counters.refreshed = 3
        counters.failed = ["transient": 2]
        counters.recovered = 1
        counters.revoked = 4
        let first = Self.scrape(metrics, counters)
        #expect(first.contains("# TYPE tokenvault_refreshes_total counter"))
        #expect(first.contains(#"tokenvault_refreshes_total{outcome="succeeded"} 3"#))
        #expect(first.contains(#"tokenvault_refreshes_total{outcome="transient"} 2"#))
        #expect(first.contains(#"tokenvault_refreshes_total{outcome="invalid_grant"} 0"#))
        #expect(first.contains("tokenvault_refresh_recoveries_total 1"))
        #expect(first.contains(#"tokenvault_revocations_total{outcome="revoked"} 4"#))

        counters.refreshed = 10
        counters.failed["transient"] = 5
        let second = Self.scrape(metrics, counters)
        #expect(second.contains(#"tokenvault_refreshes_total{outcome="succeeded"} 10"#))
        #expect(second.contains(#"tokenvault_refreshes_total{outcome="transient"} 5"#))
        #expect(second.contains("tokenvault_refresh_recoveries_total 1"), "unchanged totals stay put")

        counters.refreshed = 7  // a total never goes back; if it did, the counter would hold
        #expect(Self.scrape(metrics, counters).contains(#"tokenvault_refreshes_total{outcome="succeeded"} 10"#))
    }
}
