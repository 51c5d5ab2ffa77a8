import BenchmarkSupport
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultStorage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

struct SeedOptions {
    var dataDir: String
    var count: Int
    var start: Int
    var batch: Int
    var namespace: String
}

/// Writes `count` credentials into the vault through the ledger's bulk import, `batch` per
/// transaction at `synchronous=NORMAL` (`Vault.put` commits each one with `synchronous=FULL`,
/// which is right for real refresh tokens and needlessly slow for 100,000 fixtures). The
/// daemon reads these rows exactly as it reads rows stored through the API.
func seed(_ options: SeedOptions) async throws {
    umask(0o077)  // as the CLI does: WAL and shared-memory files are created 0600
    let databasePath = options.dataDir + "/vault.db"
    guard access(databasePath, F_OK) == 0 else {
        fail("no vault at \(databasePath); create one with: tokenvault init --data-dir \(options.dataDir)")
    }
    let database = try SQLiteDatabase(path: databasePath, checksum: { SHA256.hex($0) })
    defer { database.close() }
    let keyring = try Keyring(
        masterKey: try MasterKey.read(keyFile: options.dataDir + "/master.key"), store: database)
    try database.migrate()
    let vault = Vault(store: database, sealer: keyring)

    var generator = SplitMix64(seed: UInt64(truncatingIfNeeded: options.start) &+ 0x5EED)
    let started = monotonicNanoseconds()
    var next = options.start
    let end = options.start + options.count
    while next < end {
        let batchEnd = min(end, next + max(1, options.batch))
        let credentials = try (next..<batchEnd).map { index in
            Vault.NewCredential(
                id: try CredentialID(namespace: options.namespace, name: "c\(index)"),
                payload: TokenPayload(
                    kind: .oauth2,
                    secrets: CredentialSecrets(
                        accessToken: SecretBytes(utf8: "t." + generator.token(length: Int.random(in: 38...198))),
                        refreshToken: SecretBytes(utf8: generator.token(length: 64))),
                    tokenType: "Bearer", scopes: ["opensme/individual/id/get"], expiry: .after(seconds: 3600)),
                provider: "tinkoff-id")
        }
        try await vault.importCredentials(credentials, durability: .normal)
        next = batchEnd
    }
    let seconds = Double(monotonicNanoseconds() - started) / 1e9
    print(
        "seeded \(options.count) credentials \(options.namespace)/c\(options.start)..c\(end - 1) in "
            + "\(format(seconds, decimals: 1)) s (\(format(Double(options.count) / max(seconds, 1e-9), decimals: 0))/s)"
    )
}
