import Foundation
import Testing
import TokenVaultClient

/// `/v1/admin`: the test process's uid is the daemon's, hence admin.
@Suite("Admin over the socket")
struct AdminTests {
    @Test func auditRowsNameOperationsButNoTokens() async throws {
        try await Daemon.run { daemon in
            let payload = Payload.oauth()
            try await daemon.client.put("payments/alice", provider: "oauth2", token: payload.data)
            _ = try await daemon.client.token("payments/alice")
            try await daemon.client.put("payments/bob", provider: "oauth2", token: Payload.oauth().data)

            let page = try await daemon.client.auditEvents(credential: "payments/alice")
            let operations = page.items.map(\.operation)
            #expect(operations.contains("credential.put"))
            #expect(operations.contains("token.read"))
            #expect(page.items.allSatisfy { $0.credentialID == "payments/alice" })
            #expect(page.items.allSatisfy { $0.uid == Int64(getuid()) })
            let encoded = String(decoding: try JSONEncoder().encode(page), as: UTF8.self)
            #expect(!encoded.contains(payload.access))

            // Cursors page through every row exactly once.
            var ids: [Int64] = []
            var cursor: String?
            var pages = 0
            repeat {
                let next = try await daemon.client.auditEvents(cursor: cursor, limit: 1)
                ids += next.items.map(\.id)
                cursor = next.nextCursor
                pages += 1
            } while cursor != nil && pages < 50
            let all = try await daemon.client.auditEvents()
            #expect(ids == all.items.map(\.id))
            #expect(Set(ids).count == ids.count)
            #expect(ids == ids.sorted(by: >), "newest first")

            // Oldest first, and a follower passing its last row's id gets only what came since.
            let oldest = try await daemon.client.auditEvents(oldestFirst: true)
            #expect(oldest.items.map(\.id) == all.items.map(\.id).reversed())
            let last = try #require(oldest.items.last?.id)
            try await daemon.client.put("payments/carol", provider: "oauth2", token: Payload.oauth().data)
            let since = try await daemon.client.auditEvents(cursor: String(last), oldestFirst: true)
            #expect(since.items.map(\.credentialID) == ["payments/carol"], "\(since.items.map(\.operation))")
        }
    }

    @Test func rotateKeyResealsEveryCredential() async throws {
        try await Daemon.run { daemon in
            let payload = Payload.oauth()
            try await daemon.client.put("payments/alice", provider: "oauth2", token: payload.data)
            try await daemon.client.put("payments/bob", provider: "oauth2", token: Payload.tinkoff().data)
            let result = try await daemon.client.rotateKey(timeout: .seconds(60))
            #expect(result.resealed == 2)
            #expect(result.newTerm > 1)
            #expect(result.remainingTerms.isEmpty)
            #expect(try await daemon.client.token("payments/alice").accessToken == payload.access)
        }
    }

    @Test func backupWritesAFile() async throws {
        try await Daemon.run { daemon in
            try await daemon.client.put("payments/alice", provider: "oauth2", token: Payload.oauth().data)
            let backup = try await daemon.client.backup()
            #expect(backup.bytes > 0)
            #expect(backup.path.hasPrefix(daemon.fixture.directory.file("backups") + "/"))
            let size = try FileManager.default.attributesOfItem(atPath: backup.path)[.size] as? NSNumber
            #expect(size?.int64Value == backup.bytes)
        }
    }
}
