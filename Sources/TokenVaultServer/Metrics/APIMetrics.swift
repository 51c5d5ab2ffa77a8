import Prometheus
import Synchronization
import TokenVaultCore

/// Prometheus metrics of the API: requests by route, method and status; latency by route;
/// credentials by status (counted at scrape time). Labels never carry ids or values.
public final class APIMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    private let fastPathAnswered: Counter
    private let fastPathRouted: Counter
    /// The series of a served token read, looked up once: the fast path records one per request.
    private let tokenServed: (count: Counter, duration: DurationHistogram)
    private static let buckets: [Duration] = [
        .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
        .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(1000),
    ]

    public init() {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        func fastPathCounter(_ outcome: String) -> Counter {
            registry.counter(
                name: "tokenvault_http_token_fast_path_total", labels: [("outcome", outcome)],
                help: "GET .../token requests answered on the event loop, or routed (refresh due, refusal, error).")
        }
        fastPathAnswered = fastPathCounter("answered")
        fastPathRouted = fastPathCounter("routed")
        tokenServed = Self.series(registry, route: Route.token.template, method: "GET", status: 200)
    }

    func record(route: String, method: String, status: Int, duration: Duration) {
        let series = routeSeries.series(RouteSeriesKey(route: route, method: method, status: status)) {
            Self.series(registry, route: route, method: method, status: status)
        }
        series.count.increment()
        series.duration.record(duration)
    }

    private struct RouteSeriesKey: Hashable {
        let route: String
        let method: String
        let status: Int
    }

    private let routeSeries = MetricSeries<RouteSeriesKey, (count: Counter, duration: DurationHistogram)>()

    /// A GET other than a token read answered on the event loop: the router's series for it, and
    /// the fast path's own count by route.
    func recordFastAnswer(route: String, status: Int, duration: Duration) {
        record(route: route, method: "GET", status: status, duration: duration)
        fastAnswers.series(route) {
            registry.counter(
                name: "tokenvault_http_fast_path_answers_total", labels: [("route", route)],
                help: "GET requests other than token reads answered on the event loop (health, metadata, 404).")
        }.increment()
    }

    /// One counter per route template the fast path answers (a handful).
    private let fastAnswers = MetricSeries<String, Counter>()

    /// A token read answered with 200 by the fast path (same series as the router's).
    func recordServedToken(duration: Duration) {
        tokenServed.count.increment()
        tokenServed.duration.record(duration)
    }

    private static func series(_ registry: PrometheusCollectorRegistry, route: String, method: String, status: Int)
        -> (count: Counter, duration: DurationHistogram)
    {
        let count = registry.counter(
            name: "tokenvault_http_requests_total",
            labels: [("route", route), ("method", method), ("code", String(status))],
            help: "HTTP requests answered, by route template, method and status code.")
        let duration = registry.durationHistogram(
            name: "tokenvault_http_request_duration_seconds", labels: [("route", route), ("method", method)],
            buckets: buckets, help: "Time to answer an HTTP request.")
        return (count, duration)
    }

    /// A sign-in's step: `started`, `finished` (the credential stored) or `failed` (refused,
    /// denied, expired, or the code not redeemed; the audit row says which).
    func recordSignIn(_ outcome: String) {
        signIns.series(outcome) {
            registry.counter(
                name: "tokenvault_sign_ins_total", labels: [("outcome", outcome)],
                help: "Sign-ins the vault started, finished into a credential, or failed to finish.")
        }.increment()
    }

    private let signIns = MetricSeries<String, Counter>()

    private static let proxyBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5),
        .seconds(10), .seconds(30),
    ]

    /// A proxied call, by provider instance and the upstream's status class (`refused`: the vault
    /// did not send it or got no answer); `duration`: until the upstream's answer began.
    func recordProxyCall(provider: String, status: Int?, duration: Duration?) {
        let statusClass = status.map { "\($0 / 100)xx" } ?? "refused"
        let series = proxySeries.series(ProxySeriesKey(provider: provider, statusClass: statusClass)) {
            (
                registry.counter(
                    name: "tokenvault_proxy_calls_total",
                    labels: [("provider", provider), ("status_class", statusClass)],
                    help: "Calls made through the proxy, by provider instance and upstream status class."),
                registry.durationHistogram(
                    name: "tokenvault_proxy_call_duration_seconds", labels: [("provider", provider)],
                    buckets: Self.proxyBuckets, help: "Time from a proxied call's arrival to the upstream's answer.")
            )
        }
        series.0.increment()
        if let duration { series.1.record(duration) }
    }

    private struct ProxySeriesKey: Hashable {
        let provider: String
        let statusClass: String
    }

    private let proxySeries = MetricSeries<ProxySeriesKey, (Counter, DurationHistogram)>()

    /// Token reads the event-loop fast path answered itself, or passed on to the router.
    func recordFastPath(answered: Bool) {
        (answered ? fastPathAnswered : fastPathRouted).increment()
    }

    /// What each counter fed from the engine's running totals was last advanced to.
    private let exported = Mutex<[String: Int]>([:])

    /// Advances a Prometheus counter to `total` (the engine keeps running totals; a counter only
    /// goes up, by the difference since the last scrape).
    private func advance(_ name: String, labels: [(String, String)], to total: Int, help: String) {
        let key = name + labels.map { "\u{0}\($0.0)=\($0.1)" }.joined()
        let step = exported.withLock { last -> Int in
            let step = max(0, total - (last[key] ?? 0))
            last[key] = max(total, last[key] ?? 0)
            return step
        }
        let counter = registry.counter(name: name, labels: labels, help: help)
        if step > 0 { counter.increment(by: Int64(step)) }
    }

    /// The ledger's held commits: provider answers the database has not taken yet.
    struct HeldCommits {
        var held: Int
        var failures: Int
        var recovered: Int
    }

    func exposition(
        credentialsByStatus counts: [CredentialStatus: Int]?, refresh: RefreshCounters? = nil,
        providers: [ProviderState] = [], heldCommits: HeldCommits? = nil, audit: AuditRecorder.Counters? = nil,
        courier: CourierStatus? = nil, storage: StorageStatus? = nil, webhooks: WebhookCounters? = nil,
        upstreamClients: Int? = nil, clock: CorrectedClock? = nil, webhookBacklog: [String: Int]? = nil,
        keyTerm: UInt32? = nil
    ) -> [UInt8] {
        if let keyTerm {
            registry.gauge(
                name: "tokenvault_key_term_active", help: "The data key term new seals use (each rotate-key raises it)."
            ).set(Double(keyTerm))
        }
        // Unknown while the database does not answer (NaN), like the credential counts.
        for state in ["pending", "failed"] {
            registry.gauge(
                name: "tokenvault_webhook_outbox", labels: [("state", state)],
                help: "Webhook deliveries in the outbox: pending (the backlog) and failed (dead letters)."
            ).set(webhookBacklog.map { Double($0[state] ?? 0) } ?? .nan)
        }
        // PostgreSQL: this node's clock against the database's, once measured.
        if let clock, let offset = clock.offset {
            registry.gauge(
                name: "tokenvault_clock_offset_seconds",
                help: "The database's clock minus this node's, as the last heartbeat measured it."
            ).set(offset)
            registry.gauge(
                name: "tokenvault_clock_skew_refusing",
                help:
                    "1 while this node's clock is further off the database's than limits.max_clock_offset_seconds: it serves and refreshes nothing (alert if 1)."
            ).set(clock.refusal == nil ? 0.0 : 1.0)
        }
        if let upstreamClients {
            registry.gauge(
                name: "tokenvault_proxy_upstream_clients",
                help: "HTTP clients the proxy keeps, one per provider instance, credential and caller."
            ).set(Double(upstreamClients))
        }
        registry.gauge(
            name: "tokenvault_database_up", help: "1 when the database answered this scrape (alert if 0)."
        ).set(counts == nil ? 0.0 : 1.0)
        // Unknown while the database does not answer (NaN), not the last values read.
        for status in CredentialStatus.stored {
            registry.gauge(
                name: "tokenvault_credentials", labels: [("status", status.rawValue)],
                help: "Stored credentials by status."
            ).set(counts.map { Double($0[status] ?? 0) } ?? .nan)
        }
        if let connected = storage?.changeFeedConnected {
            registry.gauge(
                name: "tokenvault_change_feed_connected",
                help: "PostgreSQL: 1 while this node hears the other nodes' changes (its cache is unused while 0)."
            ).set(connected ? 1.0 : 0.0)
            registry.gauge(
                name: "tokenvault_change_feed_reconnects",
                help: "PostgreSQL: times the change listener reconnected and replayed what it missed."
            ).set(Double(storage?.changeFeedReconnects ?? 0))
        }
        if let cache = storage?.rowCache {
            registry.gauge(
                name: "tokenvault_row_cache_rows",
                help: "Sealed rows held for token reads (storage.cache_bytes bounds them)."
            ).set(Double(cache.rows))
            registry.gauge(
                name: "tokenvault_row_cache_bytes", help: "What the cached sealed rows hold, as the cache estimates it."
            ).set(Double(cache.bytes))
            advance(
                "tokenvault_row_cache_hits_total", labels: [], to: cache.hits,
                help: "Row lookups answered from the cache since start-up.")
            advance(
                "tokenvault_row_cache_misses_total", labels: [], to: cache.misses,
                help: "Rows read from the database because the cache did not hold them, since start-up.")
        }
        if let refresh {
            var outcomes: [(String, Int)] = [("succeeded", refresh.refreshed), ("skipped", refresh.skipped)]
            for kind in ProviderFailure.Kind.allCases {
                outcomes.append((kind.rawValue, refresh.failed[kind.rawValue] ?? 0))
            }
            for (outcome, count) in outcomes {
                advance(
                    "tokenvault_refreshes_total", labels: [("outcome", outcome)], to: count,
                    help: "Refreshes since start-up, by outcome (a failure by its class).")
            }
            for (provider, outcomes) in refresh.byProvider {
                for (outcome, count) in outcomes {
                    advance(
                        "tokenvault_provider_refreshes_total", labels: [("provider", provider), ("outcome", outcome)],
                        to: count, help: "Refreshes since start-up, by provider instance and outcome.")
                }
            }
            for (provider, outcomes) in refresh.tokenExchanges {
                for (outcome, count) in outcomes {
                    advance(
                        "tokenvault_token_exchanges_total", labels: [("provider", provider), ("outcome", outcome)],
                        to: count,
                        help: "RFC 8693 exchanges for callers since start-up, by provider instance and outcome "
                            + "(derived, cached, or a failure's class).")
                }
            }
            if let age = refresh.heartbeatAge {
                registry.gauge(
                    name: "tokenvault_heartbeat_age_seconds",
                    help: "Seconds since this node's heartbeat last went through (leases renew with it)."
                ).set(age)
            }
            advance(
                "tokenvault_heartbeat_lapses_total", labels: [], to: refresh.heartbeatLapses,
                help: "Heartbeats that went through only after a third of the lease period or more, since start-up.")
            advance(
                "tokenvault_refresh_recoveries_total", labels: [], to: refresh.recovered,
                help: "Refresh attempts resumed after a crash since start-up.")
            advance(
                "tokenvault_answers_lost_to_takeover_total", labels: [], to: refresh.answersLostToTakeover,
                help:
                    "Provider answers this node held but could not store because another node took the refresh over (alert if > 0)."
            )
            for (outcome, count) in [("reapplied", refresh.failoverReapplied), ("missing", refresh.failoverMissing)] {
                advance(
                    "tokenvault_failover_kept_commits_total", labels: [("outcome", outcome)], to: count,
                    help:
                        "Commits a database failover lost that this node kept: re-applied, or whose credential the database no longer had (alert if > 0)."
                )
            }
            registry.gauge(
                name: "tokenvault_failover_hold",
                help:
                    "1 while refreshes wait for every node to re-apply what a database failover lost (alert if 1 for minutes)."
            ).set(Double(refresh.failoverHold ? 1 : 0))
            for (outcome, count) in [
                ("authorized", refresh.deviceSignInsAuthorized), ("failed", refresh.deviceSignInsFailed),
            ] {
                advance(
                    "tokenvault_device_sign_ins_total", labels: [("outcome", outcome)], to: count,
                    help: "Device sign-ins this node's poller ended since start-up, with tokens stored or without.")
            }
            for (outcome, count) in [("revoked", refresh.revoked), ("failed", refresh.revocationFailures)] {
                advance(
                    "tokenvault_revocations_total", labels: [("outcome", outcome)], to: count,
                    help: "Revocations at providers since start-up, by outcome.")
            }
        }
        if let heldCommits {
            registry.gauge(
                name: "tokenvault_held_commits",
                help: "Provider answers held in memory because the database has not taken them yet (alert if > 0)."
            ).set(Double(heldCommits.held))
            advance(
                "tokenvault_commit_failures_total", labels: [], to: heldCommits.failures,
                help: "Failed commits of tokens a provider issued (each retry counts) since start-up.")
            advance(
                "tokenvault_held_commits_recovered_total", labels: [], to: heldCommits.recovered,
                help: "Held provider answers committed after failing at first, since start-up.")
        }
        if let audit {
            registry.gauge(
                name: "tokenvault_audit_pending", help: "Audit rows recorded and not written yet."
            ).set(Double(audit.pending))
            advance(
                "tokenvault_audit_written_total", labels: [], to: audit.written,
                help: "Audit rows written by the recorder since start-up (aggregated token reads count once).")
            advance(
                "tokenvault_audit_write_failures_total", labels: [], to: audit.writeFailures,
                help: "Audit batches the database refused (kept and retried) since start-up.")
            advance(
                "tokenvault_audit_dropped_total", labels: [], to: audit.dropped,
                help: "Audit rows dropped because the database refused them for too long (alert if > 0).")
            advance(
                "tokenvault_audit_pruned_total", labels: [], to: audit.pruned,
                help: "Audit rows pruned by age or count since start-up.")
        }
        if let courier {
            registry.gauge(name: "tokenvault_courier_up", help: "1 while the courier process runs (alert if 0).")
                .set(courier.isUp ? 1.0 : 0.0)
            registry.gauge(
                name: "tokenvault_courier_calls_in_flight", help: "Provider calls the courier is making now."
            ).set(Double(courier.callsInFlight))
            registry.gauge(
                name: "tokenvault_courier_unsettled_answers",
                help: "Answers the courier keeps for this daemon until they are committed."
            ).set(Double(courier.unsettled))
            registry.gauge(
                name: "tokenvault_spool_refused_files",
                help: "Spool files that could not be used (torn, foreign, renamed); see the log (alert if > 0)."
            ).set(Double(courier.refusedSpoolFiles))
            advance(
                "tokenvault_courier_restarts_total", labels: [], to: courier.restarts,
                help: "Couriers started again after one ended unexpectedly, since start-up.")
            advance(
                "tokenvault_spool_answers_recovered_total", labels: [], to: courier.recovered,
                help: "Provider answers taken from the spool (answered while no daemon ran), since start-up.")
        }
        if let webhooks {
            for (outcome, count) in [
                ("delivered", webhooks.delivered), ("failed_attempt", webhooks.failedAttempts),
                ("dead_lettered", webhooks.deadLettered), ("claim_lost", webhooks.claimsLost),
            ] {
                advance(
                    "tokenvault_webhook_deliveries_total", labels: [("outcome", outcome)], to: count,
                    help:
                        "Webhook deliveries since start-up, by outcome: delivered, failed_attempt (each failed try), dead_lettered (given up after the retry period, its last try counted in failed_attempt too; alert if > 0), claim_lost."
                )
            }
        }
        for provider in providers {
            for condition in ProviderState.Condition.allCases {
                registry.gauge(
                    name: "tokenvault_provider_condition",
                    labels: [("provider", provider.name), ("condition", condition.rawValue)],
                    help:
                        "1 for the provider instance's current condition (ok, circuit_open, misconfigured, not_configured)."
                ).set(provider.condition == condition ? 1.0 : 0.0)
            }
            registry.gauge(
                name: "tokenvault_provider_in_flight", labels: [("provider", provider.name)],
                help: "Calls in flight to the provider instance."
            ).set(Double(provider.inFlight))
        }
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}
