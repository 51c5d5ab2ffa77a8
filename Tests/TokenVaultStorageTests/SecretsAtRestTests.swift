import Foundation
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultTesting

@testable import TokenVaultStorage

@Suite struct SecretsAtRestTests {
    @Test func noStoredTokenAppearsInTheDatabaseFileOrItsWAL() async throws {
        let fixture = try TestVault()
        var tokens: [String] = []
        for index in 0..<30 {
            let sample = [SamplePayloads.tinkoff(), SamplePayloads.oauth(), SamplePayloads.ebs()][index % 3]
            tokens += sample.tokens
            try await fixture.vault.put(
                try CredentialID("scan/c\(index)"), payload: try SamplePayloads.decode(sample.json), provider: "p")
        }
        // Overwrite some so freed pages and older WAL frames exist too.
        for index in 0..<10 {
            let sample = SamplePayloads.oauth()
            tokens += sample.tokens
            try await fixture.vault.put(
                try CredentialID("scan/c\(index)"), payload: try SamplePayloads.decode(sample.json), provider: "p")
        }
        let wal = RawBytes.read(fixture.databasePath + "-wal")
        #expect(wal.count > 0, "the WAL should hold the recent writes")
        try fixture.database.checkpoint()
        let main = RawBytes.read(fixture.databasePath)
        #expect(main.count > 0)
        for token in tokens {
            let probe = Array(token.utf8.suffix(24))
            #expect(!RawBytes.contains(wal, probe), "a token is readable in the WAL")
            #expect(!RawBytes.contains(main, probe), "a token is readable in the database file")
        }
        // The scan itself must be able to find what it looks for.
        #expect(RawBytes.contains(main, Array("scan/c7".utf8)))
    }

    @Test func wrongMasterKeyFailsClearlyAndLeavesTheFileUntouched() async throws {
        let fixture = try TestVault()
        try await fixture.vault.put(
            try CredentialID("ns/a"), payload: try SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "p")
        fixture.database.close()
        let before = RawBytes.read(fixture.databasePath)
        let walBefore = RawBytes.read(fixture.databasePath + "-wal")
        #expect {
            _ = try fixture.reopen(masterKey: SodiumRandom.secret(count: 32))
        } throws: { error in
            let error = error as! VaultError
            return error.code == .wrongMasterKey && error.message.contains("wrong key file or passphrase")
        }
        #expect(RawBytes.read(fixture.databasePath) == before)
        #expect(RawBytes.read(fixture.databasePath + "-wal") == walBefore)
        // The right key still opens it.
        let (database, keyring) = try fixture.reopen(masterKey: fixture.masterKey)
        await #expect(
            try Vault(store: database, sealer: keyring).credential(CredentialID("ns/a")).metadata.generation == 1)
    }
}
