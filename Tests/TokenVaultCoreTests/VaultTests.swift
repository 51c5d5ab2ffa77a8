import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultTesting

/// The vault's logic over an in-memory store and a real keyring.
@Suite struct VaultTests {
    let store = InMemoryStore()
    let clock = FakeClock()
    let keyring: Keyring
    let vault: Vault

    init() throws {
        keyring = try Keyring.bootstrap(masterKey: SodiumRandom.secret(count: 32), store: store, clock: clock)
        vault = Vault(store: store, sealer: keyring, clock: clock)
    }

    @Test func putThenReadEachShape() async throws {
        for (index, sample) in [SamplePayloads.tinkoff(), SamplePayloads.oauth(), SamplePayloads.ebs()].enumerated() {
            let id = try CredentialID("test/c\(index)")
            let stored = try await vault.put(id, payload: try SamplePayloads.decode(sample.json), provider: "p")
            let read = try await vault.credential(id)
            #expect(read.metadata == stored)
            #expect(read.secrets.accessToken.revealString() == sample.tokens[0])
        }
        await #expect(try vault.metadata(CredentialID("test/c2")).kind == .verifyToken)
        // Never refreshed: the engine acts on it once, at its expiry (purge).
        let ebs = try await vault.metadata(CredentialID("test/c2"))
        #expect(ebs.refreshAt != nil && ebs.refreshAt == ebs.expiresAt)
    }

    @Test func servingATokenOpensOnlyWhatItReturns() async throws {
        let id = try CredentialID("test/opening")
        let sample = SamplePayloads.oauth()
        try await vault.put(id, payload: try SamplePayloads.decode(sample.json), provider: "p")
        let served = try await vault.credential(id, opening: [.idToken])
        #expect(served.secrets.accessToken.revealString() == sample.tokens[0])
        #expect(served.secrets.idToken?.revealString() == sample.tokens[2])
        #expect(served.secrets.refreshToken == nil && served.secrets.extras == nil)
        await #expect(try vault.credential(id).secrets.refreshToken?.revealString() == sample.tokens[1])
    }

    @Test func replacingBumpsGenerationAndKeepsCreation() async throws {
        let id = try CredentialID("test/alice")
        let first = try await vault.put(
            id, payload: try SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "p")
        clock.advance(seconds: 10)
        let second = try await vault.put(
            id, payload: try SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "p")
        #expect(first.generation == 1)
        #expect(second.generation == 2)
        #expect(second.createdAt == first.createdAt)
        #expect(second.updatedAt == clock.now)
        #expect(second.expiresAt == clock.now.adding(seconds: 1800))
    }

    @Test func rejectedInputChangesNothing() async throws {
        let id = try CredentialID("test/bob")
        let payload = try SamplePayloads.decode(SamplePayloads.tinkoff().json)
        await #expect(throws: VaultError.self) {
            try await vault.put(id, payload: payload, provider: "p", labels: ["": "empty key"])
        }
        await #expect(try store.list(CredentialQuery()).isEmpty)
        await #expect(throws: VaultError.notFound(id)) { try await vault.credential(id) }
        await #expect(throws: VaultError.notFound(id)) { try await vault.delete(id) }
    }

    @Test func deleteWritesItsAuditRowInTheSameTransaction() async throws {
        let id = try CredentialID("test/carol")
        try await vault.put(id, payload: try SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "p")
        try await vault.delete(
            id,
            audit: AuditEvent(
                at: clock.now, uid: 7, operation: .credentialDelete, credentialID: id, outcome: .succeeded))
        #expect(store.auditEvents.map(\.operation) == ["credential.delete"])
        await #expect(throws: VaultError.notFound(id)) { try await vault.metadata(id) }
    }

    @Test func rotationMovesEveryRowAndDropsTheOldTerm() async throws {
        for index in 0..<25 {
            try await vault.put(
                try CredentialID("rot/c\(index)"), payload: try SamplePayloads.decode(SamplePayloads.oauth().json),
                provider: "p")
        }
        let report = try await KeyRotation(vault: vault, keyring: keyring, terms: store, batchSize: 7).rotate()
        #expect(report.newTerm == 2)
        #expect(report.resealed == 25)
        #expect(report.removedTerms == [1])
        #expect(try store.terms().map(\.term) == [2])
        await #expect(try vault.verify() == .init(credentials: 25, sealedFields: 100, failures: []))
    }
}
