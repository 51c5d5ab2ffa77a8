import Foundation
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultTesting

@testable import TokenVaultStorage

/// The webhook outbox on both backends (it runs with the PostgreSQL tests): rows written by the
/// ledger's writes, claimed in order per endpoint and credential, fenced by their claim, retried,
/// dead-lettered, redelivered, and released when their node starts again.
@Suite struct WebhookOutboxTests {
    static func claim(_ outbox: any WebhookOutbox, _ owner: String, _ endpoint: String) async throws
        -> [WebhookDelivery]
    {
        try await outbox.claimWebhookDeliveries(owner: owner, endpoints: [endpoint], leaseSeconds: 60, limit: 10)
    }

    @Test(arguments: TestBackendKind.allCases)
    func deliveriesAreClaimedInOrderFencedRetriedAndDeadLettered(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let vault = fixture.vault
        let outbox = fixture.backend
        vault.install(webhooks: WebhookRoutes(routes: [.init(endpoint: "a"), .init(endpoint: "b")]))
        let id = try CredentialID("pay/x")
        try await vault.put(id, payload: StorageContractTests.payload("x"), provider: "idp")
        try await vault.delete(id, revoked: true)

        // A credential's events go out one at a time per endpoint, in order.
        let first = try await Self.claim(outbox, "n1", "a")
        #expect(first.map(\.kind) == ["credential.revoked"])
        await #expect(try Self.claim(outbox, "n2", "a").isEmpty, "the claimed row holds the next one back")
        let claim = try #require(first[0].claim)
        #expect(claim.hasPrefix("n1/"))
        await #expect(try !outbox.finishWebhookDelivery(id: first[0].id, claim: "n2/stale"))
        await #expect(try outbox.finishWebhookDelivery(id: first[0].id, claim: claim))

        // Failed: tried again when due (at once here), then dead-lettered; dead rows hold nothing back.
        let second = try await #require(try Self.claim(outbox, "n2", "a").first)
        #expect(second.kind == "credential.deleted" && second.attempts == 0)
        await #expect(
            try outbox.failWebhookDelivery(id: second.id, claim: second.claim!, error: "HTTP 503", retryAfterSeconds: 0)
        )
        let again = try await #require(try Self.claim(outbox, "n2", "a").first)
        #expect(again.id == second.id && again.attempts == 1 && again.lastError == "HTTP 503")
        await #expect(
            try !outbox.failWebhookDelivery(id: again.id, claim: second.claim!, error: "late", retryAfterSeconds: 0))
        await #expect(
            try outbox.failWebhookDelivery(id: again.id, claim: again.claim!, error: "HTTP 500", retryAfterSeconds: nil)
        )
        await #expect(try Self.claim(outbox, "n2", "a").isEmpty)
        let failed = try await outbox.webhookDeliveries(state: .failed, after: nil, limit: 10)
        #expect(failed.map(\.id) == [second.id] && failed[0].attempts == 2 && failed[0].lastError == "HTTP 500")

        // Redelivered: pending again with the whole retry period ahead.
        await #expect(try outbox.redeliverWebhooks(ids: [second.id, 999_999]) == 1)
        let redelivered = try await #require(try Self.claim(outbox, "n3", "a").first)
        #expect(redelivered.id == second.id && redelivered.attempts == 0)
        // A node starting again drops its own claims, not others'.
        await #expect(try outbox.releaseWebhookClaims(owner: "n") == 0)
        await #expect(try outbox.releaseWebhookClaims(owner: "n3") == 1)
        await #expect(try Self.claim(outbox, "n1", "a").map(\.id) == [second.id])

        // The other endpoint's rows are its own.
        await #expect(try Self.claim(outbox, "n1", "b").map(\.kind) == ["credential.revoked"])
        await #expect(try outbox.webhookDeliveries(state: nil, after: nil, limit: 10).count == 3)
        // The payload is as written, tokens nowhere.
        let text = String(decoding: redelivered.payload, as: UTF8.self)
        #expect(text.contains(#""type":"credential.deleted""#) && !text.contains("at-x") && !text.contains("rt-x"))
    }

    /// A delayed row (a `refresh_failing`) is not due before its time and is dropped by a change
    /// announced before then.
    @Test(arguments: TestBackendKind.allCases)
    func aDelayedRowWaitsAndIsCancelled(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let id = try CredentialID("pay/y")
        let row = NewWebhookDelivery(
            endpoint: "a", messageID: "msg_1", kind: "credential.refresh_failing", credentialID: id, payload: [],
            delaySeconds: 600)
        try await fixture.backend.write(durability: .full) { try await $0.insertWebhookDeliveries([row, row]) }
        await #expect(
            try fixture.backend.webhookDeliveries(state: nil, after: nil, limit: 10).count == 1, "one row per message")
        await #expect(try Self.claim(fixture.backend, "n1", "a").isEmpty)
        await #expect(
            try fixture.backend.write(durability: .full) { try await $0.cancelDelayedWebhooks(for: id, endpoint: "b") }
                .isEmpty)
        await #expect(
            try fixture.backend.write(durability: .full) { try await $0.cancelDelayedWebhooks(for: id, endpoint: nil) }
                == [
                    "a"
                ])
        await #expect(try fixture.backend.webhookDeliveries(state: nil, after: nil, limit: 10).isEmpty)
    }

    /// Failures recorded at once (they share group commits when they arrive while one commits;
    /// on PostgreSQL those lock and read their rows together and keep their changes back, and an
    /// outbox row sends them first): each announces once, nothing lost or doubled.
    @Test(arguments: TestBackendKind.allCases)
    func failuresRecordedAtOnceAnnounceOnceEach(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let vault = fixture.vault
        vault.install(webhooks: WebhookRoutes(routes: [.init(endpoint: "a")]))
        let stored = try await vault.importCredentials(
            (0..<24).map { index in
                Vault.NewCredential(
                    id: try! CredentialID("pay/g\(index)"), payload: StorageContractTests.payload("g\(index)"),
                    provider: "idp")
            })
        try await withThrowingTaskGroup(of: Void.self) { group in
            for metadata in stored {
                group.addTask {
                    var update = ScheduleUpdate(metadata)
                    update.status = .needsReauth
                    update.lastError = CredentialFailure(
                        code: "invalid_grant", message: "refused", at: metadata.issuedAt)
                    _ = try await vault.recordFailure(
                        attempt: nil, outcome: "invalid_grant", update: update, event: .needsReauth)
                }
            }
            try await group.waitForAll()
        }
        let rows = try await fixture.backend.webhookDeliveries(state: nil, after: nil, limit: 100)
        #expect(rows.count == stored.count && rows.allSatisfy { $0.kind == "credential.needs_reauth" })
        #expect(Set(rows.compactMap(\.credentialID)) == Set(stored.map(\.id)))
        #expect(Set(rows.map(\.messageID)).count == rows.count)
    }

    /// Two nodes claiming at once never get the same row.
    @Test(arguments: TestBackendKind.allCases)
    func twoOpeningsNeverClaimTheSameRow(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        fixture.vault.install(webhooks: WebhookRoutes(routes: [.init(endpoint: "a")]))
        for index in 0..<40 {
            let id = try CredentialID("pay/c\(index)")
            try await fixture.vault.put(id, payload: StorageContractTests.payload("c\(index)"), provider: "idp")
            try await fixture.vault.delete(id)
        }
        let other = try fixture.open()
        defer { other.backend.close() }
        let outboxes: [any WebhookOutbox] = [fixture.backend, other.backend]
        let claimed = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for (index, outbox) in outboxes.enumerated() {
                group.addTask {
                    var ids: [Int64] = []
                    while true {
                        let rows = try await outbox.claimWebhookDeliveries(
                            owner: "n\(index)", endpoints: ["a"], leaseSeconds: 60, limit: 3)
                        guard !rows.isEmpty else { return ids }
                        ids += rows.map(\.id)
                    }
                }
            }
            return try await group.reduce(into: [Int64]()) { $0 += $1 }
        }
        #expect(claimed.count == 40 && Set(claimed).count == 40)
    }
}
