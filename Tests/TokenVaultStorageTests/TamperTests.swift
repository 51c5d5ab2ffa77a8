import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultTesting

@testable import TokenVaultStorage

/// Storage is untrusted: whatever is done to a sealed column, opening it fails with a clear
/// error naming the credential and field, never a crash and never wrong plaintext.
@Suite struct TamperTests {
    let fixture: TestVault
    let alice: CredentialID
    let bob: CredentialID

    init() async throws {
        fixture = try TestVault()
        alice = try CredentialID("tamper/alice")
        bob = try CredentialID("tamper/bob")
        for id in [alice, bob] {
            try await fixture.vault.put(
                id, payload: try SamplePayloads.decode(SamplePayloads.oauth().json), provider: "p")
        }
    }

    func blob(_ column: String, of id: CredentialID) throws -> [UInt8] {
        try fixture.database.withWriter { connection in
            let statement = try connection.statement("SELECT \(column) FROM credentials WHERE id = ?1").bind(
                id.description)
            defer { statement.reset() }
            _ = try statement.step()
            return statement.blob(0) ?? []
        }
    }

    func setBlob(_ column: String, of id: CredentialID, to value: [UInt8]) throws {
        try fixture.database.withWriter { connection in
            try connection.statement("UPDATE credentials SET \(column) = ?1 WHERE id = ?2").bind(value, id.description)
                .run()
        }
    }

    func expectFailure(_ id: CredentialID, field: String, code: VaultError.Code = .integrityError) async {
        await #expect {
            _ = try await fixture.vault.credential(id)
        } throws: { error in
            let error = error as! VaultError
            return error.code == code && error.message.contains("credential \(id)") && error.message.contains(field)
        }
    }

    @Test func flippedByteInAnySealedColumn() async throws {
        for column in ["access_token", "refresh_token", "id_token", "extras"] {
            let original = try blob(column, of: alice)
            var tampered = original
            tampered[tampered.count / 2] ^= 0x20
            try setBlob(column, of: alice, to: tampered)
            await expectFailure(alice, field: column)
            try setBlob(column, of: alice, to: original)
        }
        #expect(try await fixture.vault.credential(alice).metadata.id == alice)
    }

    @Test func truncatedEnvelope() async throws {
        try setBlob("access_token", of: alice, to: Array(try blob("access_token", of: alice).prefix(20)))
        await expectFailure(alice, field: "access_token")
        try setBlob("refresh_token", of: bob, to: Array(try blob("refresh_token", of: bob).dropLast(3)))
        await expectFailure(bob, field: "refresh_token")
    }

    @Test func ciphertextSwappedBetweenRows() async throws {
        let alicesToken = try blob("access_token", of: alice)
        try setBlob("access_token", of: alice, to: try blob("access_token", of: bob))
        try setBlob("access_token", of: bob, to: alicesToken)
        await expectFailure(alice, field: "access_token")
        await expectFailure(bob, field: "access_token")
    }

    @Test func ciphertextSwappedBetweenFields() async throws {
        let access = try blob("access_token", of: alice)
        try setBlob("access_token", of: alice, to: try blob("refresh_token", of: alice))
        try setBlob("refresh_token", of: alice, to: access)
        await expectFailure(alice, field: "access_token")
    }

    @Test func ciphertextFromAnOlderGeneration() async throws {
        let oldRefresh = try blob("refresh_token", of: alice)
        try await fixture.vault.put(
            alice, payload: try SamplePayloads.decode(SamplePayloads.oauth().json), provider: "p")
        try setBlob("refresh_token", of: alice, to: oldRefresh)
        await expectFailure(alice, field: "refresh_token")
    }

    @Test func envelopeRelabelledWithAnotherTerm() async throws {
        _ = try fixture.keyring.addTerm()
        var relabelled = try blob("access_token", of: alice)
        relabelled[4] = 2
        try setBlob("access_token", of: alice, to: relabelled)
        await expectFailure(alice, field: "access_token")
        relabelled[4] = 9
        try setBlob("access_token", of: alice, to: relabelled)
        await expectFailure(alice, field: "access_token", code: .unknownKeyTerm)
    }

    @Test func verifyReportsEveryDamagedFieldWithoutSecrets() async throws {
        let sample = SamplePayloads.oauth("verify-marker")
        let carol = try CredentialID("tamper/carol")
        try await fixture.vault.put(carol, payload: try SamplePayloads.decode(sample.json), provider: "p")
        var damaged = try blob("id_token", of: carol)
        damaged[damaged.count - 1] ^= 1
        try setBlob("id_token", of: carol, to: damaged)
        let report = try await fixture.vault.verify()
        #expect(report.credentials == 3)
        #expect(report.failures.count == 1)
        #expect(report.failures[0].contains("tamper/carol") && report.failures[0].contains("id_token"))
        #expect(!report.failures[0].contains("verify-marker"))
    }
}
