import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultStorage

/// What PostgreSQL adds to the contract: every node hears of every change (its own marked as
/// such), a node's cache never serves a row another node changed, and a node whose listening
/// connection was killed catches up on what it missed.
@Suite struct PostgresChangeTests {
    /// Collects the changes a database reports.
    final class Changes: Sendable {
        private let seen = Mutex<[PostgresDatabase.Change]>([])
        var all: [PostgresDatabase.Change] { seen.withLock { $0 } }
        func append(_ change: PostgresDatabase.Change) { seen.withLock { $0.append(change) } }
    }

    static func listen(_ database: PostgresDatabase) -> (Changes, Task<Void, Never>) {
        let changes = Changes()
        database.onChange { changes.append($0) }
        let listener = Task { await database.listenForChanges() }
        return (changes, listener)
    }

    static func payload(_ marker: String) -> TokenPayload {
        TokenPayload(
            kind: .oauth2,
            secrets: CredentialSecrets(
                accessToken: SecretBytes(utf8: "at-\(marker)"), refreshToken: SecretBytes(utf8: "rt-\(marker)")),
            tokenType: "Bearer", expiry: .after(seconds: 3600))
    }

    @Test func everyNodeHearsEveryChangeAndItsCacheFollows() async throws {
        let fixture = try TestBackendVault(.postgres)
        let node2 = try fixture.open()
        defer { node2.backend.close() }
        let database2 = try #require(node2.backend as? PostgresDatabase)
        let (changes, listener) = Self.listen(database2)
        defer { listener.cancel() }
        #expect(try await waitUntil { database2.listenerStatus.connected })

        let id = try CredentialID("pay/watched")
        try await fixture.vault.put(id, payload: Self.payload("one"), provider: "idp")
        // Node 2 reads (and caches) the row; node 1 replaces it; node 2 must not serve the old one.
        #expect(try node2.vault.credential(id).secrets.accessToken.revealString() == "at-one")
        try await fixture.vault.put(id, payload: Self.payload("two"), provider: "idp")
        #expect(try await waitUntil { changes.all.count >= 2 })
        #expect(try node2.vault.credential(id).secrets.accessToken.revealString() == "at-two")
        try await fixture.vault.delete(id)
        #expect(try await waitUntil { changes.all.count >= 3 })
        #expect(throws: VaultError.self) { try node2.vault.metadata(id) }

        let seen = changes.all
        #expect(seen.map(\.operation) == [.insert, .update, .delete])
        #expect(seen.allSatisfy { $0.id == id && !$0.isOwn })
        #expect(seen[1].oldGeneration == 1 && seen[1].newGeneration == 2)
        // A node's own change reaches it too, marked as its own.
        try await node2.vault.put(id, payload: Self.payload("three"), provider: "idp")
        #expect(try await waitUntil { changes.all.count >= 4 })
        #expect(changes.all.last?.isOwn == true)
    }

    /// The cache is used only while the listener is connected; a node that lost it reads the
    /// database, and once back it replays the changes committed meanwhile.
    @Test func aNodeWhoseListenerWasKilledCatchesUp() async throws {
        let fixture = try TestBackendVault(.postgres)
        let node2 = try fixture.open()
        defer { node2.backend.close() }
        let database2 = try #require(node2.backend as? PostgresDatabase)
        let (changes, listener) = Self.listen(database2)
        defer { listener.cancel() }
        #expect(try await waitUntil { database2.listenerStatus.connected })
        let id = try CredentialID("pay/missed")
        try await fixture.vault.put(id, payload: Self.payload("one"), provider: "idp")
        _ = try node2.vault.credential(id)

        // Kill every connection of node 2's listener (the one running LISTEN).
        let server = try TestPostgres.shared()
        try server.psql(
            """
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = '\(fixture.postgresDatabase!)' AND query ILIKE 'LISTEN%'
            """)
        #expect(try await waitUntil { !database2.listenerStatus.connected })
        // Meanwhile node 1 changes the row: node 2 must not serve the old one, cache or not.
        try await fixture.vault.put(id, payload: Self.payload("two"), provider: "idp")
        #expect(try node2.vault.credential(id).secrets.accessToken.revealString() == "at-two")
        #expect(try await waitUntil(within: 15) { database2.listenerStatus.reconnects >= 1 })
        #expect(try await waitUntil { changes.all.contains { $0.operation == .update && $0.newGeneration == 2 } })
    }

    @Test func urlsAreReadLikeLibpqAndNeverHoldAPassword() throws {
        typealias Configuration = PostgresDatabase.Configuration
        let tcp = try Configuration(
            url: "postgres://vault@db.internal:6432/tokens?sslmode=verify-full&sslrootcert=/etc/ca.pem", password: "p")
        #expect(tcp.endpoint == .tcp(host: "db.internal", port: 6432) && tcp.database == "tokens")
        #expect(tcp.tls == .verifyFull(caFile: "/etc/ca.pem") && tcp.username == "vault" && tcp.password == "p")
        let socket = try Configuration(url: "postgresql://vault@/tokens?host=/run/postgresql", password: nil)
        #expect(socket.endpoint == .socket(path: "/run/postgresql/.s.PGSQL.5432") && socket.tls == .disable)
        #expect(try Configuration(url: "postgres://v@h/d?sslmode=require&readers=2", password: nil).readers == 2)
        for bad in [
            "postgres://vault:secret@h/d",  // a password in the URL
            "postgres://vault@h/d",  // verify-full (the default over TCP) without a CA
            "mysql://vault@h/d", "postgres://@h/d?sslmode=disable", "postgres://v@h/?sslmode=disable",
            "postgres://v@h/d?sslmode=prefer", "postgres://v@h/d?sslmode=disable&bogus=1",
            "postgres://v@/d?host=relative", "postgres://v@/d?host=/run&sslmode=require",
            "postgres://v@h:1/d?port=2&sslmode=disable", "postgres://v@h/d?sslmode=disable&readers=0",
        ] {
            #expect(throws: VaultError.self, "\(bad)") { try Configuration(url: bad, password: nil) }
        }
        // The refusal never repeats the password.
        do {
            _ = try Configuration(url: "postgres://vault:hunter2@h/d", password: nil)
        } catch {
            #expect(!"\(error)".contains("hunter2"))
        }
    }
}
