import BenchmarkSupport
import TokenVaultCore
import TokenVaultCrypto
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

/// Writes `count` credentials straight into the vault's database, `batch` per transaction at
/// `synchronous=NORMAL` (`Vault.put` commits each one with `synchronous=FULL`, which is right
/// for real refresh tokens and needlessly slow for 100,000 fixtures). Metadata is built the
/// way `Vault.put` builds it, and every secret is sealed by the vault's own keyring, so the
/// daemon reads these rows exactly as it reads rows stored through the API.
func seed(_ options: SeedOptions) throws {
    umask(0o077)  // as the CLI does: WAL and shared-memory files are created 0600
    let databasePath = options.dataDir + "/vault.db"
    guard access(databasePath, F_OK) == 0 else {
        fail("no vault at \(databasePath); create one with: tokenvault init --data-dir \(options.dataDir)")
    }
    let database = try VaultDatabase(path: databasePath, checksum: { SHA256.hex($0) })
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
        try vault.store.write(durability: .normal) { writer in
            for index in next..<batchEnd {
                let id = try CredentialID(namespace: options.namespace, name: "c\(index)")
                let payload = TokenPayload(
                    kind: .oauth2,
                    secrets: CredentialSecrets(
                        accessToken: SecretBytes(utf8: "t." + generator.token(length: Int.random(in: 38...198))),
                        refreshToken: SecretBytes(utf8: generator.token(length: 64))),
                    tokenType: "Bearer", scopes: ["opensme/individual/id/get"], expiry: .after(seconds: 3600))
                let metadata = metadataLikePut(
                    vault, id: id, payload: payload, provider: "tinkoff-id", previous: try writer.record(id)?.metadata)
                try writer.save(try vault.seal(payload.secrets, metadata: metadata, term: keyring.activeTerm))
            }
        }
        next = batchEnd
    }
    let seconds = Double(monotonicNanoseconds() - started) / 1e9
    print(
        "seeded \(options.count) credentials \(options.namespace)/c\(options.start)..c\(end - 1) in "
            + "\(format(seconds, decimals: 1)) s (\(format(Double(options.count) / max(seconds, 1e-9), decimals: 0))/s)"
    )
}

/// The metadata `Vault.put` would write for `payload` (same generation, timing and refresh plan).
func metadataLikePut(
    _ vault: Vault, id: CredentialID, payload: TokenPayload, provider: String, previous: CredentialMetadata?
) -> CredentialMetadata {
    let now = vault.clock.now
    let expiresAt = payload.expiry.resolve(issuedAt: now)
    return CredentialMetadata(
        id: id, provider: provider, kind: payload.kind, subject: payload.subject, status: .active,
        generation: (previous?.generation ?? 0) + 1, tokenType: payload.tokenType, scopes: payload.scopes,
        labels: [:], issuedAt: now, expiresAt: expiresAt,
        refreshAt: vault.planner.refreshAt(
            issuedAt: now, expiresAt: expiresAt, refreshIn: payload.refreshIn,
            canRefresh: payload.secrets.refreshToken != nil, jitter: Double.random(in: 0..<1)),
        refreshTokenExpiresAt: payload.refreshTokenExpiry.resolve(issuedAt: now),
        createdAt: previous?.createdAt ?? now, updatedAt: now,
        hasRefreshToken: payload.secrets.refreshToken != nil, hasIDToken: payload.secrets.idToken != nil)
}
