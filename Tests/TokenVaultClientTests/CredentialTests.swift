import Foundation
import Testing
import TokenVaultClient

/// Round trips against a real daemon on a real Unix socket.
@Suite("Credentials over the socket")
struct CredentialTests {
    @Test func healthAnswers() async throws {
        try await Daemon.run { daemon in
            let health = try await daemon.client.health()
            #expect(health.status == "ok")
            #expect(health.version == "test")
            #expect(health.uptimeSeconds >= 0)
            #expect(health.database != nil)
        }
    }

    @Test func putCreatesThenReplaces() async throws {
        try await Daemon.run { daemon in
            let first = try await daemon.client.put(
                "payments/alice", provider: "oauth2", labels: ["env": "dev"], token: Payload.oauth().data)
            #expect(first.created)
            #expect(first.metadata.id == "payments/alice")
            #expect(first.metadata.namespace == "payments")
            #expect(first.metadata.name == "alice")
            #expect(first.metadata.provider == "oauth2")
            #expect(first.metadata.kind == "oauth2")
            #expect(first.metadata.status == "active")
            #expect(first.metadata.generation == 1)
            #expect(first.metadata.labels == ["env": "dev"])
            #expect(first.metadata.scopes == ["openid", "profile"])
            #expect(first.metadata.tokenType == "Bearer")
            #expect(first.metadata.subject == "user-1")
            #expect(first.metadata.hasRefreshToken)
            #expect(first.metadata.hasIDToken)
            #expect(first.metadata.expiresAt != nil)

            let second = try await daemon.client.put(
                "payments/alice", provider: "tinkoff-id", token: Payload.tinkoff().data)
            #expect(!second.created)
            #expect(second.metadata.generation == 2)
            #expect(second.metadata.provider == "tinkoff-id")
            #expect(second.metadata.labels.isEmpty)
            #expect(second.metadata.createdAt == first.metadata.createdAt)
        }
    }

    @Test func metadataMatchesWhatPutReturned() async throws {
        try await Daemon.run { daemon in
            let stored = try await daemon.client.put(
                "team_a/svc.bot-1", provider: "oauth2", token: Payload.oauth().data)
            let read = try await daemon.client.metadata("team_a/svc.bot-1")
            #expect(read == stored.metadata)
            #expect(CredentialMetadata.date(read.createdAt) != nil)
        }
    }

    @Test func tokenReturnsTheStoredValues() async throws {
        try await Daemon.run { daemon in
            let payload = Payload.oauth()
            try await daemon.client.put("payments/alice", provider: "oauth2", token: payload.data)
            let token = try await daemon.client.token("payments/alice")
            #expect(token.accessToken == payload.access)
            #expect(token.idToken == payload.idToken)
            #expect(token.tokenType == "Bearer")
            #expect(token.authorizationHeaderValue == "Bearer \(payload.access)")
            let expiry = try #require(token.expiresAtDate)
            #expect(abs(expiry.timeIntervalSinceNow - 3600) < 120)

            let fresh = try await daemon.client.token("payments/alice", minTTL: 60)
            #expect(fresh.accessToken == payload.access)
        }
    }

    /// The server's engine refreshed (the stub gives the same token back), and the lifetime
    /// still falls short: the client carries the server's code and status.
    @Test func minTTLBeyondWhatARefreshGivesIsUnreachable() async throws {
        try await Daemon.run { daemon in
            try await daemon.client.put("payments/alice", provider: "oauth2", token: Payload.oauth().data)
            let error = await #expect(throws: TokenVaultClientError.self) {
                try await daemon.client.token("payments/alice", minTTL: 7200)
            }
            #expect(error?.code == "min_ttl_unreachable")
            #expect(error?.status == 409)
        }
    }

    @Test func listPagesThroughCursors() async throws {
        try await Daemon.run { daemon in
            for index in 1...5 {
                try await daemon.client.put("paging/cred-\(index)", provider: "oauth2", token: Payload.tinkoff().data)
            }
            try await daemon.client.put("other/cred-0", provider: "oauth2", token: Payload.tinkoff().data)

            var ids: [String] = []
            var pageSizes: [Int] = []
            var cursor: String?
            repeat {
                let page = try await daemon.client.list(namespace: "paging", cursor: cursor, limit: 2)
                ids += page.items.map(\.id)
                pageSizes.append(page.items.count)
                cursor = page.nextCursor
            } while cursor != nil && pageSizes.count < 10
            #expect(ids == (1...5).map { "paging/cred-\($0)" })
            #expect(pageSizes.prefix(2) == [2, 2])
            #expect(pageSizes.reduce(0, +) == 5)

            let all = try await daemon.client.listAll(namespace: "paging")
            #expect(all.map(\.id) == ids)
            let everything = try await daemon.client.listAll()
            #expect(everything.count == 6)
            #expect(everything.first?.id == "other/cred-0")
            let active = try await daemon.client.list(status: "active")
            #expect(active.items.count == 6)
            #expect(active.nextCursor == nil)
            let expired = try await daemon.client.list(status: "expired")
            #expect(expired.items.isEmpty)
        }
    }

    @Test func deleteRemovesTheCredential() async throws {
        try await Daemon.run { daemon in
            try await daemon.client.put("payments/alice", provider: "oauth2", token: Payload.oauth().data)
            let result = try await daemon.client.delete("payments/alice")
            #expect(result == .deleted(revoked: false))

            let error = await #expect(throws: TokenVaultClientError.self) {
                try await daemon.client.metadata("payments/alice")
            }
            #expect(error?.code == "credential_not_found")
            #expect(error?.status == 404)
            let again = await #expect(throws: TokenVaultClientError.self) {
                try await daemon.client.delete("payments/alice")
            }
            #expect(again?.code == "credential_not_found")
        }
    }

    /// Keep-alive connections are reused: many sequential calls, and concurrent ones, all succeed.
    @Test func manyRequestsShareThePool() async throws {
        try await Daemon.run { daemon in
            let payload = Payload.oauth()
            try await daemon.client.put("payments/alice", provider: "oauth2", token: payload.data)
            for _ in 0..<200 {
                let token = try await daemon.client.token("payments/alice")
                #expect(token.accessToken == payload.access)
            }
            let client = daemon.client
            let matches = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<50 {
                    group.addTask { try await client.token("payments/alice").accessToken == payload.access }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(matches == 50)
        }
    }
}
