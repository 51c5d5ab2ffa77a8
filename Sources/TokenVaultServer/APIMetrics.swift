import Prometheus
import TokenVaultCore

/// Prometheus metrics of the API: requests by route, method and status; latency by route;
/// credentials by status (counted at scrape time). Labels never carry ids or values.
public final class APIMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private static let buckets: [Duration] = [
        .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
        .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(1000),
    ]

    public init() {}

    func record(route: String, method: String, status: Int, duration: Duration) {
        registry.makeCounter(
            name: "tokenvault_http_requests_total",
            labels: [("route", route), ("method", method), ("code", String(status))],
            help: "HTTP requests answered, by route template, method and status code."
        ).increment()
        registry.makeDurationHistogram(
            name: "tokenvault_http_request_duration_seconds", labels: [("route", route), ("method", method)],
            buckets: Self.buckets, help: "Time to answer an HTTP request."
        ).record(duration)
    }

    func exposition(credentialsByStatus counts: [CredentialStatus: Int]) -> [UInt8] {
        for status in CredentialStatus.allCases {
            registry.makeGauge(
                name: "tokenvault_credentials", labels: [("status", status.rawValue)],
                help: "Stored credentials by status."
            ).set(Double(counts[status] ?? 0))
        }
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}
