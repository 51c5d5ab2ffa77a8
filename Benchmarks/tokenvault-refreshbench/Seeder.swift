import BenchmarkSupport
import Foundation
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultStorage

/// Writes credentials `bench/c<i>` of provider `idp` into an initialised vault through the
/// ledger's bulk import, `batch` per transaction at `synchronous=NORMAL`, as
/// `tokenvault-loadgen seed` does (a `Vault.put` per row would commit each with FULL: right for
/// real tokens, needlessly slow for a million fixtures). The daemon reads these rows like any
/// others.
///
/// Timing is what a steady flow of one-hour tokens looks like: `refresh_at` is spread evenly
/// over the next hour, each token issued 45 minutes before its `refresh_at` (the planner's
/// default share of 0.75, without jitter) and expiring an hour after issue.
struct Seeder {
    let dataDir: String
    let provider = "idp"
    let namespace = "bench"

    /// Adds credentials `c<start>..c<start+count-1>`.
    func seed(start: Int, count: Int, batch: Int = 10_000) async throws {
        umask(0o077)
        let database = try SQLiteDatabase(path: dataDir + "/vault.db", checksum: { SHA256.hex($0) })
        defer { database.close() }
        let keyring = try Keyring(masterKey: try MasterKey.read(keyFile: dataDir + "/master.key"), store: database)
        try database.migrate()
        let vault = Vault(
            store: database, sealer: keyring,
            providers: ProviderTable(
                settings: [
                    provider: ProviderSettings(
                        name: provider, kind: "oauth2", planner: RefreshPlanner(jitterFraction: 0))
                ]))
        var generator = SplitMix64(seed: UInt64(start) &+ 0x5EED)
        let started = monotonicSeconds()
        let now = Timestamp.now()
        var next = start
        while next < start + count {
            let end = min(start + count, next + batch)
            let credentials = try (next..<end).map { index in
                let refreshAt = now.adding(seconds: Double(generator.next() % 3_600_000) / 1000)
                return Vault.NewCredential(
                    id: try CredentialID(namespace: namespace, name: "c\(index)"),
                    payload: TokenPayload(
                        kind: .oauth2,
                        secrets: CredentialSecrets(
                            accessToken: SecretBytes(utf8: generator.token(length: 40 + Int(generator.next() % 160))),
                            refreshToken: SecretBytes(utf8: generator.token(length: 64))),
                        tokenType: "Bearer", scopes: ["profile"], expiry: .after(seconds: 3600)),
                    provider: provider, issuedAt: refreshAt.adding(seconds: -2700))
            }
            try await vault.importCredentials(credentials, durability: .normal)
            next = end
            if (next - start) % 100_000 == 0 { progress("seeded \(grouped(next - start)) of \(grouped(count))") }
        }
        let seconds = monotonicSeconds() - started
        progress(
            "seeded \(grouped(count)) credentials in \(format(seconds, 1)) s (\(grouped(Int(Double(count) / seconds)))/s)"
        )
    }
}
