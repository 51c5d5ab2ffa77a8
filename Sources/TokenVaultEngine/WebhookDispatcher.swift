import Logging
import ServiceLifecycle
import Synchronization
import TokenVaultCore
import TokenVaultLedger

/// Delivers the webhook outbox. It claims due rows for the endpoints it knows (on PostgreSQL,
/// rows another node claimed are skipped, so each row goes out from one node), sends each, and
/// deletes it once the endpoint took it, or schedules the next try (`WebhookRetry`), or
/// dead-letters it. A credential's rows go to an endpoint one at a time, in order. Each endpoint
/// has its own slots, so a slow or dead endpoint holds up only its own deliveries; refreshes
/// never wait for any of it (they only write rows).
public final class WebhookDispatcher: Service, Sendable {
    public struct Options: Sendable, Equatable {
        public var retry: WebhookRetry
        /// Deliveries in flight at once per endpoint.
        public var concurrency: Int
        /// How long a claim keeps other nodes off a row: longer than any attempt can take.
        public var leaseSeconds: Double
        /// How often the outbox is looked at when nothing woke the dispatcher.
        public var pollSeconds: Double

        public init(
            retry: WebhookRetry = WebhookRetry(), concurrency: Int = 4, leaseSeconds: Double = 120,
            pollSeconds: Double = 1
        ) {
            self.retry = retry
            self.concurrency = max(1, concurrency)
            self.leaseSeconds = leaseSeconds
            self.pollSeconds = pollSeconds
        }
    }

    private struct State {
        var senders: [String: any WebhookSending] = [:]
        var options: Options
        var inFlight: [String: Int] = [:]
        /// The outbox could not be read at the last look (logged once, and again when it can).
        var outboxFailing = false
    }

    private let outbox: any WebhookOutbox
    /// Whose claims this dispatcher's are (the node).
    private let owner: String
    private let logger: Logger
    private let state: Mutex<State>
    private let wake = WakeSignal()
    private let tally = Mutex(WebhookCounters())

    /// `owner`: the node's name; claims are named after it, and those of its earlier processes
    /// are dropped when it starts.
    public init(
        outbox: any WebhookOutbox, owner: String, options: Options = Options(), logger: Logger
    ) {
        self.outbox = outbox
        self.owner = owner
        self.logger = logger
        state = Mutex(State(options: options))
    }

    /// Puts endpoints and options in force (start-up and each reload). Deliveries in flight
    /// finish with the sender they started with; rows of an endpoint no longer configured wait
    /// in the outbox, listed by `tokenvault webhooks`, until it is configured again.
    public func install(senders: [String: any WebhookSending], options: Options) {
        state.withLock {
            $0.senders = senders
            $0.options = options
        }
        wake.signal()
    }

    /// What it did since start-up (metrics).
    public var counters: WebhookCounters { tally.withLock { $0 } }

    public func run() async throws {
        // A claim of this node's earlier process would keep its rows waiting for the lease.
        _ = try? await outbox.releaseWebhookClaims(owner: owner)
        await cancelWhenGracefulShutdown { [self] in
            // Deliveries in flight when the daemon stops are cancelled: their rows stay and are
            // sent again (a receiver tells a repeat by its webhook-id).
            await withDiscardingTaskGroup { group in
                while !Task.isCancelled {
                    for (delivery, sender) in await claim() {
                        group.addTask { await self.deliver(delivery, with: sender) }
                    }
                    // Without endpoints, asleep until a reload installs some: polling then would
                    // only wake an idle daemon for nothing.
                    await wake.wait(seconds: state.withLock { $0.senders.isEmpty ? 86_400 : $0.options.pollSeconds })
                }
            }
        }
        // What was cut off goes to whichever node looks next, not after the claims' lease (this
        // node may not come back).
        _ = try? await outbox.releaseWebhookClaims(owner: owner)
    }

    /// Claims what each endpoint has slots for.
    private func claim() async -> [(WebhookDelivery, any WebhookSending)] {
        let (wanted, options, senders) = state.withLock { state in
            (
                state.senders.keys.map { ($0, state.options.concurrency - state.inFlight[$0, default: 0]) }
                    .filter { $0.1 > 0 }, state.options, state.senders
            )
        }
        var claimed: [(WebhookDelivery, any WebhookSending)] = []
        for (endpoint, slots) in wanted.sorted(by: { $0.0 < $1.0 }) {
            let rows: [WebhookDelivery]
            do {
                rows = try await outbox.claimWebhookDeliveries(
                    owner: owner, endpoints: [endpoint], leaseSeconds: options.leaseSeconds, limit: slots)
            } catch {
                // Once per outage, not at every look (the database being down is reported already).
                if noteOutbox(failing: true) {
                    logger.warning(
                        "the webhook outbox cannot be read; deliveries wait until it can",
                        metadata: ["tokenvault.error": "\(error)"])
                }
                return claimed
            }
            if noteOutbox(failing: false) {
                logger.notice("the webhook outbox can be read again; deliveries go on")
            }
            guard let sender = senders[endpoint] else { continue }
            state.withLock { $0.inFlight[endpoint, default: 0] += rows.count }
            claimed += rows.map { ($0, sender) }
        }
        return claimed
    }

    /// Records whether the outbox could be read at this look; true when that changed.
    private func noteOutbox(failing: Bool) -> Bool {
        state.withLock { state in
            defer { state.outboxFailing = failing }
            return state.outboxFailing != failing
        }
    }

    private func deliver(_ delivery: WebhookDelivery, with sender: any WebhookSending) async {
        defer {
            state.withLock { $0.inFlight[delivery.endpoint, default: 1] -= 1 }
            wake.signal()
        }
        guard let claim = delivery.claim else { return }
        let attempt = await sender.send(delivery)
        // Cut off by the daemon's stop: not the endpoint's failure (the row's claim is dropped
        // when the dispatcher ends). A delivery the endpoint took is still recorded.
        if attempt != .delivered, Task.isCancelled { return }
        let retry = state.withLock { $0.options.retry }
        let kept: Bool?
        switch attempt {
        case .delivered:
            kept = try? await outbox.finishWebhookDelivery(id: delivery.id, claim: claim)
            if kept == true {
                tally.withLock { $0.delivered += 1 }
                logger.debug(
                    "webhook delivered",
                    metadata: [
                        "tokenvault.webhook.endpoint": "\(delivery.endpoint)",
                        "tokenvault.webhook.id": "\(delivery.messageID)", "tokenvault.webhook.type": "\(delivery.kind)",
                    ])
            }
        case .failed(let reason, let retryAfter):
            let delay = retry.delay(afterFailures: delivery.attempts + 1, retryAfter: retryAfter)
            kept = try? await outbox.failWebhookDelivery(
                id: delivery.id, claim: claim, error: reason, retryAfterSeconds: delay)
            tally.withLock {
                $0.failedAttempts += 1
                if delay == nil && kept == true { $0.deadLettered += 1 }
            }
            let metadata: Logger.Metadata = [
                "tokenvault.webhook.endpoint": "\(delivery.endpoint)", "tokenvault.webhook.id": "\(delivery.messageID)",
                "tokenvault.webhook.type": "\(delivery.kind)", "tokenvault.error": "\(reason)",
                "tokenvault.webhook.attempts": "\(delivery.attempts + 1)",
            ]
            if delay == nil {
                logger.error("webhook delivery failed for the whole retry period; dead-lettered", metadata: metadata)
            } else {
                logger.warning("webhook delivery failed; it is retried", metadata: metadata)
            }
        }
        if kept == false {
            // The claim lapsed and another attempt (this node's or another's) holds the row: its
            // outcome counts. The endpoint may get the event twice, which the webhook-id tells.
            tally.withLock { $0.claimsLost += 1 }
        }
    }
}
