/// Webhook events, written to the outbox by the ledger inside the transaction of the change that
/// causes them: a crash after the commit loses nothing, and a write that rolls back announces
/// nothing. Which change announces what is decided here, once (`WebhookAnnouncer`); the writes
/// of `Vault+Writes.swift` and `Vault+Refresh.swift` only hand it the row before and after.
extension Vault {
    /// The routes in force (none until the daemon installs its `webhooks` section).
    public var webhooks: WebhookRoutes { webhookRoutes.withLock { $0 } }

    /// Puts routes in force for the next write (start-up, and each reload).
    public func install(webhooks: WebhookRoutes) { webhookRoutes.withLock { $0 = webhooks } }

    /// What a write closure takes along: the routes as they were when the write was asked for.
    var announcer: WebhookAnnouncer { WebhookAnnouncer(routes: webhooks, now: clock.now) }

    /// A rotation finished: every credential is sealed under `term`. Its own transaction, after
    /// the last re-seal (a rotation interrupted before it is resumed, and announced, by the next
    /// `rotate-key` or start-up that finishes it).
    public func announceKeyRotation(term: UInt32) async throws {
        let announcer = announcer
        guard announcer.isActive else { return }
        try await writes.write(.full) { writer in
            try announcer.announce([WebhookEvent(kind: .keyRotated, at: announcer.now, keyTerm: term)], writer)
        }
    }
}

/// Turns a change to a credential into outbox rows, one per endpoint that wants each event.
/// With no routes it does nothing at all, not even a read.
struct WebhookAnnouncer: Sendable {
    let routes: WebhookRoutes
    let now: Timestamp

    var isActive: Bool { !routes.isEmpty }

    /// Statuses whose end with new tokens is a recovery.
    private static let troubled: Set<CredentialStatus> = [.failing, .needsReauth, .expired]

    /// A change of schedule or state (a refresh's failure, expiry, a revocation's failure): what
    /// the status moved to, and `explicit` kinds the caller knows of (a revocation failing).
    func changed(
        from previous: CredentialMetadata?, to after: CredentialMetadata, explicit: [WebhookEvent.Kind] = [],
        _ writer: any CredentialWriter
    ) throws {
        guard isActive else { return }
        var events: [(WebhookEvent, delay: Double)] = explicit.map { (WebhookEvent($0, after, at: now), 0) }
        if previous?.status != after.status {
            switch after.status {
            case .needsReauth: events.append((WebhookEvent(.needsReauth, after, at: now), 0))
            case .expired: events.append((WebhookEvent(.expired, after, at: now), 0))
            case .failing:
                // Announced only if it lasts: due later, dropped by a recovery before then.
                let event = WebhookEvent(.refreshFailing, after, at: now, failingSince: now)
                events.append((event, routes.failingAfterSeconds))
            case .active, .revokePending: break
            }
        }
        try announce(events, writer)
    }

    /// New tokens (a refresh, a put, a code exchange) for a credential that was `previous`: a
    /// recovery, unless it was failing for too short a time to have been announced.
    func newTokens(previous: CredentialMetadata?, after: CredentialMetadata, _ writer: any CredentialWriter) throws {
        guard isActive, let previous, Self.troubled.contains(previous.status) else { return }
        let unannounced = try writer.cancelDelayedWebhooks(for: after.id)
        if previous.status == .failing && unannounced > 0 { return }
        try announce([(WebhookEvent(.recovered, after, at: now), 0)], writer)
    }

    /// The row is gone (`last`: as it was); `revoked`: the provider confirmed the revocation.
    func deleted(_ last: CredentialMetadata?, revoked: Bool, id: CredentialID, _ writer: any CredentialWriter) throws {
        guard isActive else { return }
        let kinds: [WebhookEvent.Kind] = revoked ? [.revoked, .deleted] : [.deleted]
        let events = kinds.map { kind in
            last.map { WebhookEvent(kind, $0, at: now) } ?? WebhookEvent(kind: kind, at: now, credentialID: id)
        }
        try announce(events.map { ($0, 0) }, writer)
    }

    func announce(_ events: [WebhookEvent], _ writer: any CredentialWriter) throws {
        try announce(events.map { ($0, 0) }, writer)
    }

    /// Writes the rows. Anything announced about a credential drops its `refresh_failing` that
    /// is not due yet: the newer event says more, and would otherwise wait behind it.
    private func announce(_ events: [(WebhookEvent, delay: Double)], _ writer: any CredentialWriter) throws {
        var rows: [NewWebhookDelivery] = []
        var cancelled: Set<CredentialID> = []
        for (event, delay) in events {
            let endpoints = routes.endpoints(for: event)
            guard !endpoints.isEmpty else { continue }
            if let id = event.credentialID, cancelled.insert(id).inserted {
                _ = try writer.cancelDelayedWebhooks(for: id)
            }
            let payload = event.payload()
            for endpoint in endpoints {
                rows.append(
                    NewWebhookDelivery(
                        endpoint: endpoint, messageID: "msg_" + Vault.randomID(), kind: event.kind.rawValue,
                        credentialID: event.credentialID, payload: payload, delaySeconds: delay))
            }
        }
        if !rows.isEmpty { try writer.insertWebhookDeliveries(rows) }
    }
}
