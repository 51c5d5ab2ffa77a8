import TokenVaultCore

/// Webhook events, written to the outbox by the ledger inside the transaction of the change that
/// causes them: a crash after the commit loses nothing, and a write that rolls back announces
/// nothing. Which change announces what is decided here, once (`WebhookAnnouncer`); the writes
/// of `Vault+Writes.swift` and `Vault+Refresh.swift` only hand it the row before and after.
extension Vault {
    /// The routes in force (none until the daemon installs its `webhooks` section).
    public var webhooks: WebhookRoutes { webhookRoutes.withLock { $0 } }

    /// Puts routes in force for the next write (start-up, and each reload).
    public func install(webhooks: WebhookRoutes) { webhookRoutes.withLock { $0 = webhooks } }

    /// What a write closure takes along: the routes as they were when the write was asked for,
    /// and the trace context of the request that asked for it.
    var announcer: WebhookAnnouncer {
        WebhookAnnouncer(routes: webhooks, now: clock.now, traceparent: TraceContext.current?.traceparent)
    }

    /// A rotation finished: every credential is sealed under `term`. Its own transaction, after
    /// the last re-seal; a crash before it leaves the rotation to `rotate-key --resume`, which
    /// announces it then. The message id is the term's, so announcing it again writes nothing
    /// while the first is still in the outbox (and a receiver that got it drops the repeat).
    public func announceKeyRotation(term: UInt32) async throws {
        let announcer = announcer
        guard announcer.isActive else { return }
        try await writes.write(.full) { writer in
            try await announcer.announce(
                WebhookEvent(kind: .keyRotated, at: announcer.now, keyTerm: term), messageID: "msg_key_term_\(term)",
                writer)
        }
    }

    /// A device sign-in ended: `credential.authorized` (reason nil) or
    /// `credential.authorization_failed`. Written before the grant's row is removed, under a
    /// message id of the grant and the outcome, so a crash in between announces it again as the
    /// same message (and an authorization found after a failure was announced still goes out).
    public func announceSignInEnded(_ id: CredentialID, provider: String, key: String, reason: String?) async throws {
        let announcer = announcer
        guard announcer.isActive else { return }
        let metadata = try? await self.metadata(id)
        let event = WebhookEvent(
            kind: reason == nil ? .authorized : .authorizationFailed, at: announcer.now, credentialID: id,
            provider: provider, status: metadata?.status, generation: metadata?.generation, reason: reason)
        try await writes.write(.full) { writer in
            let outcome = reason == nil ? "authorized" : "failed"
            try await announcer.announce(event, messageID: "msg_sign_in_\(outcome)_\(key.prefix(32))", writer)
        }
    }
}

/// Turns a change to a credential into outbox rows, one per endpoint that wants each event.
/// With no routes it does nothing at all, not even a read.
///
/// A failure is announced only if it lasts: its `refresh_failing` row is written at the first
/// failure, due `failingAfterSeconds` later. It goes before then, for every endpoint, when the
/// credential stops failing (new tokens, or any other status) or is deleted, and for one
/// endpoint when that endpoint is told something newer about the credential (which says more,
/// and would otherwise wait behind it).
///
/// `recovered` goes, with new tokens, to the endpoints that may have been told of the trouble:
/// after a failure, those whose `refresh_failing` had come due; after `needs_reauth` or
/// `expired`, those that take that event and those that take `refresh_failing` (the refusal or
/// the expiry may have ended a failure they were told of; one more `recovered` is better than a
/// backend that believes a credential still broken).
struct WebhookAnnouncer: Sendable {
    let routes: WebhookRoutes
    let now: Timestamp
    /// Sent with every delivery this change causes (nil: no request's, a scheduled refresh's).
    var traceparent: String? = nil

    var isActive: Bool { !routes.isEmpty }

    /// The event each troubled status was announced with.
    private static let trouble: [CredentialStatus: WebhookEvent.Kind] = [
        .failing: .refreshFailing, .needsReauth: .needsReauth, .expired: .expired,
    ]

    /// A change of schedule or state (a refresh's failure, expiry, a revocation's failure): what
    /// the status moved to, and `explicit` kinds the caller knows of (a revocation failing).
    func changed(
        from previous: CredentialMetadata?, to after: CredentialMetadata, explicit: [WebhookEvent.Kind] = [],
        _ writer: any CredentialWriter
    ) async throws {
        guard isActive else { return }
        var events: [(WebhookEvent, delay: Double)] = explicit.map { (WebhookEvent($0, after, at: now), 0) }
        if let previous, previous.status != after.status {
            // No longer failing, whatever it is now: a failure not announced yet never will be.
            if previous.status == .failing { _ = try await writer.cancelDelayedWebhooks(for: after.id, endpoint: nil) }
            switch after.status {
            case .needsReauth: events.append((WebhookEvent(.needsReauth, after, at: now), 0))
            case .expired: events.append((WebhookEvent(.expired, after, at: now), 0))
            case .failing:
                let event = WebhookEvent(.refreshFailing, after, at: now, failingSince: now)
                events.append((event, routes.failingAfterSeconds))
            case .active, .revokePending, .pendingAuthorization: break
            }
        }
        try await announce(events, writer)
    }

    /// New tokens (a refresh, a put, a code exchange) for a credential that was `previous`.
    func newTokens(previous: CredentialMetadata?, after: CredentialMetadata, _ writer: any CredentialWriter)
        async throws
    {
        // A credential that has not failed since its last tokens has nothing pending: the
        // refresh path of a healthy one sends no statement for webhooks.
        guard isActive, let previous, previous.refreshFailures > 0 || Self.trouble[previous.status] != nil else {
            return
        }
        // Whatever the status is now (a failure may have turned into a removal that a put undid).
        let unannounced = try await writer.cancelDelayedWebhooks(for: after.id, endpoint: nil)
        guard let trouble = Self.trouble[previous.status] else { return }
        var told = Set(routes.endpoints(for: WebhookEvent(trouble, previous, at: now)))
        if trouble == .refreshFailing {
            told.subtract(unannounced)
        } else {
            told.formUnion(routes.endpoints(for: WebhookEvent(.refreshFailing, previous, at: now)))
        }
        let recovered = WebhookEvent(.recovered, after, at: now)
        try await insert(recovered, delay: 0, to: routes.endpoints(for: recovered).filter(told.contains), writer)
    }

    /// The row is gone (`last`: as it was); `revoked`: the provider confirmed the revocation.
    func deleted(_ last: CredentialMetadata?, revoked: Bool, id: CredentialID, _ writer: any CredentialWriter)
        async throws
    {
        guard isActive else { return }
        _ = try await writer.cancelDelayedWebhooks(for: id, endpoint: nil)
        let kinds: [WebhookEvent.Kind] = revoked ? [.revoked, .deleted] : [.deleted]
        let events = kinds.map { kind in
            last.map { WebhookEvent(kind, $0, at: now) } ?? WebhookEvent(kind: kind, at: now, credentialID: id)
        }
        try await announce(events.map { ($0, 0) }, writer)
    }

    /// Events about no credential (a key rotation); `messageID`: the same for every announcement
    /// of the same fact, so one made twice is written once.
    func announce(_ event: WebhookEvent, messageID: String, _ writer: any CredentialWriter) async throws {
        try await insert(event, delay: 0, to: routes.endpoints(for: event), messageID: messageID, writer)
    }

    private func announce(_ events: [(WebhookEvent, delay: Double)], _ writer: any CredentialWriter) async throws {
        for (event, delay) in events {
            let endpoints = routes.endpoints(for: event)
            if let id = event.credentialID {
                for endpoint in endpoints { _ = try await writer.cancelDelayedWebhooks(for: id, endpoint: endpoint) }
            }
            try await insert(event, delay: delay, to: endpoints, writer)
        }
    }

    private func insert(
        _ event: WebhookEvent, delay: Double, to endpoints: [String], messageID: String? = nil,
        _ writer: any CredentialWriter
    ) async throws {
        guard !endpoints.isEmpty else { return }
        let payload = event.payload()
        try await writer.insertWebhookDeliveries(
            endpoints.map { endpoint in
                NewWebhookDelivery(
                    endpoint: endpoint, messageID: messageID ?? "msg_" + Vault.randomID(), kind: event.kind.rawValue,
                    credentialID: event.credentialID, payload: payload, delaySeconds: delay, traceparent: traceparent)
            })
    }
}
