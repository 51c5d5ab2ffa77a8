import BenchmarkSupport
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultStorage

/// A real vault wired as the `tokenvault` tool wires it (database, migrations, keyring from a
/// random master key, `Vault`), in a temporary directory, holding `ids.count` credentials
/// whose access token is a 2 KiB secret.
final class VaultFixture {
    static let provider = "bench-provider"

    let database: SQLiteDatabase
    let vault: Vault
    let ids: [CredentialID]

    init(path: String, count: Int) throws {
        database = try SQLiteDatabase(path: path, checksum: SHA256.hex)
        try database.migrate()
        let masterKey = SodiumRandom.secret(count: XChaCha20Poly1305.keySize)
        let keyring = try Keyring.bootstrap(masterKey: masterKey, store: database)
        vault = Vault(store: database, sealer: keyring)
        ids = try (0..<count).map { index in try CredentialID(namespace: "bench", name: "credential-\(index)") }
    }

    deinit { database.close() }

    /// Stores every credential with `Vault.put` (each one a FULL-sync transaction, as in
    /// production), then checkpoints the WAL so reads start from the same state as the raw table.
    func fill() throws {
        let vault = vault
        for id in ids {
            let payload = Self.payload()
            _ = try runBlocking { try await vault.put(id, payload: payload, provider: Self.provider) }
        }
        try database.checkpoint()
    }

    /// An OAuth 2 payload with a fresh random 2 KiB access token, expiring in an hour.
    static func payload() -> TokenPayload {
        TokenPayload(
            kind: .oauth2,
            secrets: CredentialSecrets(accessToken: SodiumRandom.secret(count: BenchmarkOptions.secretSize)),
            expiry: .after(seconds: 3600))
    }

    /// Fails unless `id` reads back with a 2 KiB access token: the read benchmark must
    /// measure successful reads, not errors.
    func check(_ id: CredentialID) throws {
        let credential = try vault.credentialWithoutWaiting(id, opening: Set(SealedField.allCases))
        guard credential.metadata.id == id, credential.secrets.accessToken.count == BenchmarkOptions.secretSize
        else { throw BenchmarkError("vault read of \(id) returned the wrong credential") }
    }
}
