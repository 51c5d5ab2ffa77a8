import Foundation
import Testing
import TokenVaultCore
import TokenVaultLedger
import TokenVaultTesting

@testable import TokenVaultStorage

/// Node heartbeats on both backends: one call renews a node and reads every node's
/// counter with the database's time; forgetting a node releases its open attempts.
extension StorageContractTests {
    @Test(arguments: TestBackendKind.allCases)
    func heartbeatsRaiseACounterPerNodeAndReadEveryNode(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let other = try fixture.open()
        defer { other.backend.close() }
        let a = NodeBeat(node: "node-a", incarnation: "1", host: "h1", pid: 10)
        let b = NodeBeat(node: "node-b", incarnation: "1", host: "h2", pid: 20)
        _ = try await fixture.backend.heartbeat(a)
        _ = try await other.backend.heartbeat(b)
        let second = try await fixture.backend.heartbeat(a)
        #expect(second.nodes.map(\.node).sorted() == ["node-a", "node-b"])
        #expect(second.nodes.first { $0.node == "node-a" }?.beat == 2)
        #expect(second.nodes.first { $0.node == "node-b" }?.beat == 1)
        // The time is the database's: within a minute of this host's on the test machine.
        #expect(abs(second.databaseNow.seconds - Date().timeIntervalSince1970) < 60 || kind == .sqlite)
        let listed = try await other.backend.nodes()
        #expect(listed.map(\.node) == ["node-a", "node-b"] && listed[1].host == "h2" && listed[1].pid == 20)
        // A new incarnation of a node keeps its counter going and restarts its start time.
        let started = listed[0].startedAt
        let restarted = try await fixture.backend.heartbeat(
            NodeBeat(node: "node-a", incarnation: "2", host: "h1", pid: 11))
        let again = try #require(restarted.nodes.first { $0.node == "node-a" })
        #expect(again.beat == 3 && again.incarnation == "2" && again.pid == 11 && again.startedAt >= started)
    }

    @Test(arguments: TestBackendKind.allCases)
    func forgettingANodeReleasesItsOpenAttemptsOnly(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let ids = try ["pay/a", "pay/b", "pay/c"].map { try CredentialID($0) }
        for id in ids { try await fixture.vault.put(id, payload: Self.payload(id.name), provider: "idp") }
        // Owners of two nodes whose names are prefixes and LIKE patterns of each other.
        let owners = ["no_de/1", "no_de/2", "no%de/1"]
        _ = try await fixture.backend.heartbeat(NodeBeat(node: "no_de", incarnation: "2", host: "h", pid: 1))
        for (id, owner) in zip(ids, owners) {
            let started = try await fixture.vault.beginAttempt(
                Vault.AttemptRequest(
                    metadata: try fixture.vault.metadata(id), fingerprint: "fp", owner: owner,
                    leaseUntil: fixture.clock.now.adding(seconds: 60), isOwnerGone: { _, _ in false }))
            #expect(started != nil)
        }
        await #expect(try fixture.backend.forgetNode("no_de") == 2)
        let open = try await fixture.vault.openAttempts(limit: 10).map { "\($0.credentialID)=\($0.leaseOwner)" }
            .sorted()
        #expect(open == ["pay/a=\(LeaseName.released)", "pay/b=\(LeaseName.released)", "pay/c=no%de/1"])
        await #expect(try fixture.backend.nodes().isEmpty)
        await #expect(try fixture.backend.forgetNode("no_de") == nil)
        await #expect(try fixture.backend.forgetNode("no%de") == 1)
    }

    /// A stored answer's call key is kept for 30 days, so a replay of its spooled copy is
    /// recognised. On PostgreSQL it is stamped and pruned by the database's clock: a node whose
    /// clock runs 40 days ahead prunes nothing the others may still need.
    @Test(arguments: TestBackendKind.allCases)
    func storedAnswerKeysAreKeptForThirtyDays(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let id = try CredentialID("pay/answered")
        try await fixture.backend.write(durability: .full) {
            try await $0.recordReceivedAnswer("exchange:a1", credentialID: id, at: fixture.clock.now)
        }
        await #expect(try fixture.backend.isAnswerStored("exchange:a1"))
        await #expect(try !fixture.backend.isAnswerStored("exchange:a2"))
        _ = try await fixture.backend.pruneFinishedAttempts(before: fixture.clock.now, limit: 100)
        await #expect(try fixture.backend.isAnswerStored("exchange:a1"))
        fixture.clock.advance(seconds: 40 * 86_400)
        _ = try await fixture.backend.pruneFinishedAttempts(before: fixture.clock.now, limit: 100)
        await #expect(try fixture.backend.isAnswerStored("exchange:a1") == (kind == .postgres))
    }
}
