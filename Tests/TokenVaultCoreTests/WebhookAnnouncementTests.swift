import Foundation
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultTesting

/// Which change announces which webhook event, written by the ledger in the change's own
/// transaction (an in-memory store and a fake clock), and what a payload holds.
@Suite struct WebhookAnnouncementTests {
    let store = InMemoryStore()
    let clock = FakeClock()
    let vault: Vault
    let id: CredentialID

    init() throws {
        let keyring = try Keyring.bootstrap(masterKey: SodiumRandom.secret(count: 32), store: store, clock: clock)
        vault = Vault(store: store, sealer: keyring, clock: clock)
        vault.install(webhooks: WebhookRoutes(routes: [.init(endpoint: "all")], failingAfterSeconds: 600))
        id = try CredentialID("pay/alice")
    }

    var kinds: [String] { store.webhookRows.map(\.kind) }

    func put() async throws -> CredentialMetadata {
        try await vault.put(id, payload: try SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "p")
    }

    func fail(_ metadata: CredentialMetadata, _ status: CredentialStatus, code: String) async throws
        -> CredentialMetadata
    {
        var update = ScheduleUpdate(metadata)
        update.status = status
        update.refreshFailures += 1
        update.lastError = CredentialFailure(code: code, message: "the provider said no: rt-secret", at: clock.now)
        return try #require(
            try await vault.recordFailure(attempt: nil, outcome: code, update: update, event: .failing))
    }

    @Test func nothingIsWrittenWithoutRoutes() async throws {
        vault.install(webhooks: .none)
        let stored = try await put()
        _ = try await fail(stored, .needsReauth, code: "invalid_grant")
        try await vault.delete(id)
        #expect(store.webhookRows.isEmpty)
    }

    /// A failure is announced only if it lasts: its row is due later and dropped by a recovery
    /// before then, which then announces nothing either.
    /// A failure that is still pending when the credential is marked for removal, then stored
    /// again, is dropped: it would arrive later about a healthy credential.
    @Test func aPendingFailureDoesNotOutliveARemovalUndoneByAPut() async throws {
        let stored = try await put()
        let failing = try await fail(stored, .failing, code: "provider_unavailable")
        var update = ScheduleUpdate(failing)
        update.status = .revokePending
        _ = try await vault.updateSchedule(update)
        #expect(store.webhookRows.isEmpty)
        _ = try await put()
        #expect(store.webhookRows.isEmpty)
    }

    /// New tokens for a credential that has not failed since its last ones (every refresh of a
    /// healthy one) write nothing and look for nothing in the outbox.
    @Test func aHealthyCredentialsNewTokensCostTheOutboxNothing() async throws {
        _ = try await put()
        _ = try await put()
        #expect(store.webhookCancels == 0 && store.webhookRows.isEmpty)
        _ = try await fail(try vault.metadata(id), .failing, code: "provider_unavailable")
        let before = store.webhookCancels
        _ = try await put()
        #expect(store.webhookCancels == before + 1, "new tokens after a failure drop its pending row")
    }

    @Test func aShortFailureAnnouncesNothing() async throws {
        let stored = try await put()
        let failing = try await fail(stored, .failing, code: "provider_unavailable")
        #expect(kinds == ["credential.refresh_failing"])
        #expect(store.webhookRows[0].delaySeconds == 600)
        // A second failure of the same streak adds nothing.
        _ = try await fail(failing, .failing, code: "provider_unavailable")
        #expect(kinds == ["credential.refresh_failing"])
        _ = try await put()
        #expect(store.webhookRows.isEmpty, "the recovery dropped the failure and announced nothing")
    }

    @Test func aRefusedGrantIsAnnouncedAtOnceAndItsEndIsARecovery() async throws {
        let stored = try await put()
        let failing = try await fail(stored, .failing, code: "provider_unavailable")
        _ = try await fail(failing, .needsReauth, code: "invalid_grant")
        // The pending failure gave way to the refusal, which says more to the same endpoint.
        #expect(kinds == ["credential.needs_reauth"])
        #expect(store.webhookRows[0].delaySeconds == 0)
        let payload = try JSONSerialization.jsonObject(with: Data(store.webhookRows[0].payload)) as? [String: Any]
        let data = try #require(payload?["data"] as? [String: Any])
        #expect(payload?["type"] as? String == "credential.needs_reauth")
        #expect(data["reason"] as? String == "invalid_grant")
        #expect(data["id"] as? String == "pay/alice" && data["namespace"] as? String == "pay")
        #expect(data["status"] as? String == "needs_reauth" && data["provider"] as? String == "p")
        _ = try await put()
        #expect(kinds == ["credential.needs_reauth", "credential.recovered"])
    }

    @Test func aDeletionAfterARevocationAnnouncesBoth() async throws {
        _ = try await put()
        try await vault.delete(id, revoked: true)
        #expect(kinds == ["credential.revoked", "credential.deleted"])
        _ = try await put()
        try await vault.delete(id)
        #expect(kinds.suffix(1) == ["credential.deleted"])
        #expect(
            Set(store.webhookRows.map(\.messageID)).count == store.webhookRows.count, "every message has its own id")
    }

    @Test func expiryAndAnExplicitRevocationFailureAreAnnounced() async throws {
        let stored = try await put()
        var update = ScheduleUpdate(stored)
        update.status = .revokePending
        let pending = try #require(try await vault.updateSchedule(update, announcing: [.revocationFailing]))
        #expect(kinds == ["credential.revocation_failing"])
        update = ScheduleUpdate(pending)
        update.status = .expired
        _ = try await vault.updateSchedule(update)
        #expect(kinds == ["credential.revocation_failing", "credential.expired"])
    }

    /// Endpoints with different filters: each keeps its own pending failure, and hears of a
    /// recovery only from a trouble it was told of (or, for a failure, whose time had come).
    @Test func eachEndpointHearsOfTheTroubleItWantsAndItsEnd() async throws {
        vault.install(
            webhooks: WebhookRoutes(
                routes: [
                    .init(endpoint: "failing", kinds: [.refreshFailing, .recovered]),
                    .init(endpoint: "signin", kinds: [.needsReauth, .recovered]),
                ], failingAfterSeconds: 600))
        func rows(_ endpoint: String) -> [String] { store.webhookRows.filter { $0.endpoint == endpoint }.map(\.kind) }
        let stored = try await put()
        // A short failure and its recovery: nobody is told of either.
        _ = try await fail(stored, .failing, code: "provider_unavailable")
        #expect(rows("failing") == ["credential.refresh_failing"])
        _ = try await put()
        #expect(store.webhookRows.isEmpty)
        // A failure that turns into a refusal: the refusal goes to `signin`, and the failure,
        // never due, to nobody.
        let failing = try await fail(try vault.metadata(id), .failing, code: "provider_unavailable")
        _ = try await fail(failing, .needsReauth, code: "invalid_grant")
        #expect(rows("failing").isEmpty)
        #expect(rows("signin") == ["credential.needs_reauth"])
        // New tokens: both hear of the recovery (`failing` may have been told of a failure
        // before it turned into a refusal, and the vault does not keep whether it was).
        _ = try await put()
        #expect(rows("signin") == ["credential.needs_reauth", "credential.recovered"])
        #expect(rows("failing") == ["credential.recovered"])
    }

    /// A key rotation announced twice (a resumed rotation) is one row per endpoint.
    @Test func aKeyRotationAnnouncedTwiceIsWrittenOnce() async throws {
        try await vault.announceKeyRotation(term: 4)
        try await vault.announceKeyRotation(term: 4)
        #expect(kinds == ["vault.key_rotated"])
        #expect(store.webhookRows[0].messageID == "msg_key_term_4")
    }

    /// Routes pick endpoints by kind and namespace; an event about no credential goes only to
    /// endpoints without a namespace filter.
    @Test func routesFilterByKindAndNamespace() throws {
        let routes = WebhookRoutes(routes: [
            .init(endpoint: "signin", kinds: [.needsReauth, .recovered]),
            .init(endpoint: "payments", namespaces: ["pay"]),
            .init(endpoint: "ops"),
        ])
        let needs = WebhookEvent(kind: .needsReauth, at: clock.now, credentialID: id)
        let deleted = WebhookEvent(kind: .deleted, at: clock.now, credentialID: try CredentialID("crm/bob"))
        let rotated = WebhookEvent(kind: .keyRotated, at: clock.now, keyTerm: 3)
        #expect(routes.endpoints(for: needs) == ["signin", "payments", "ops"])
        #expect(routes.endpoints(for: deleted) == ["ops"])
        #expect(routes.endpoints(for: rotated) == ["ops"])
    }

    /// A payload is ids, statuses, codes and times: not a label, not a failure's message.
    @Test func aPayloadHoldsNoSecretNorFreeText() async throws {
        let stored = try await vault.put(
            id, payload: try SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "p",
            labels: ["customer": "private-label-value"])
        _ = try await fail(stored, .needsReauth, code: "invalid_grant")
        let text = String(decoding: store.webhookRows[0].payload, as: UTF8.self)
        for secret in SamplePayloads.tinkoff().tokens + ["private-label-value", "rt-secret", "the provider said no"] {
            #expect(!text.contains(secret), "\(text)")
        }
        #expect(text.contains(#""timestamp":"\#(clock.now)""#), "\(text)")
    }

    /// Waits double up to the cap; once their sum would pass the period the delivery is given up.
    @Test func retriesDoubleUpToTheCapForThePeriod() {
        let retry = WebhookRetry(baseSeconds: 1, capSeconds: 4, periodSeconds: 12)
        #expect((1...6).map { retry.delay(afterFailures: $0) } == [1, 2, 4, 4, nil, nil])
        #expect(retry.delay(afterFailures: 1, retryAfter: 3) == 3)
        #expect(retry.delay(afterFailures: 1, retryAfter: 60) == 4, "Retry-After is honoured up to the cap")
        #expect(
            WebhookRetry(baseSeconds: 5, capSeconds: 3600, periodSeconds: 3 * 86_400).delay(afterFailures: 100) == nil)
    }
}
