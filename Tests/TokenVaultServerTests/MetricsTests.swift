import Testing
import TokenVaultCore

@testable import TokenVaultServer

/// The engine keeps running totals; /metrics exports them as Prometheus counters (`_total`,
/// TYPE counter) that equal those totals and never go down.
@Suite struct MetricsTests {
    static func scrape(_ metrics: APIMetrics, _ counters: RefreshCounters) -> String {
        String(decoding: metrics.exposition(credentialsByStatus: [:], refresh: counters), as: UTF8.self)
    }

    /// The cache of rows, for sizing `storage.cache_bytes`: what it holds (gauges) and how often
    /// it answered (counters that follow the cache's totals).
    @Test func theRowCacheIsExported() {
        let metrics = APIMetrics()
        func scrape(_ cache: RowCacheStatistics) -> String {
            String(
                decoding: metrics.exposition(
                    credentialsByStatus: [:], storage: StorageStatus(backend: "sqlite", rowCache: cache)),
                as: UTF8.self)
        }
        let first = scrape(RowCacheStatistics(rows: 3, bytes: 3_000, hits: 10, misses: 4))
        #expect(first.contains("\ntokenvault_row_cache_rows 3"))
        #expect(first.contains("\ntokenvault_row_cache_bytes 3000"))
        #expect(first.contains("\ntokenvault_row_cache_hits_total 10"))
        #expect(first.contains("\ntokenvault_row_cache_misses_total 4"))
        #expect(first.contains("# TYPE tokenvault_row_cache_hits_total counter"))
        let second = scrape(RowCacheStatistics(rows: 2, bytes: 2_000, hits: 25, misses: 4))
        #expect(
            second.contains("\ntokenvault_row_cache_rows 2") && second.contains("\ntokenvault_row_cache_hits_total 25"))
        #expect(!String(decoding: metrics.exposition(credentialsByStatus: [:]), as: UTF8.self).isEmpty)
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
