import Prometheus

/// Metrics made by their whole name (`tokenvault_proxy_calls_total`), as the alert rules, the
/// dashboards and docs/operations.md spell them, rather than by swift-prometheus's parts
/// (namespace, subsystem, name, unit): a descriptor whose name is the whole and whose unit is
/// empty gives that name back unchanged.
extension PrometheusCollectorRegistry {
    func counter(name: String, labels: [(String, String)] = [], help: String) -> Counter {
        makeCounter(descriptor: Self.descriptor(name, help), labels: labels)
    }

    func gauge(name: String, labels: [(String, String)] = [], help: String) -> Gauge {
        makeGauge(descriptor: Self.descriptor(name, help), labels: labels)
    }

    func durationHistogram(
        name: String, labels: [(String, String)] = [], buckets: [Duration], help: String
    ) -> DurationHistogram {
        makeDurationHistogram(descriptor: Self.descriptor(name, help), labels: labels, buckets: buckets)
    }

    private static func descriptor(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }
}
