import Foundation
import Logging
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultStorage
import TokenVaultTesting

@testable import TokenVaultEngine

/// A refresh engine over a real SQLite vault in a temporary directory, with a scripted
/// provider named `scripted`. `realTime` uses the system clock (for scheduler tests);
/// otherwise the vault's fake clock.
struct EngineFixture {
    let testVault: TestVault
    let vault: Vault
    let provider: ScriptedProvider
    let engine: RefreshEngine
    let logs: CapturedLogs

    init(
        realTime: Bool = false, limits: ProviderLimits = ProviderLimits(),
        planner: RefreshPlanner = RefreshPlanner(), provider: ScriptedProvider = ScriptedProvider(),
        options: RefreshEngine.Options = RefreshEngine.Options(), vaultOptions: Vault.Options = Vault.Options(),
        testVault: TestVault? = nil, store: ((SQLiteDatabase) -> any CredentialStore)? = nil
    ) throws {
        let testVault = try testVault ?? TestVault()
        self.testVault = testVault
        let clock: any VaultClock = realTime ? SystemClock() : testVault.clock
        vault = Vault(
            store: store?(testVault.database) ?? testVault.database, sealer: testVault.keyring, clock: clock,
            options: vaultOptions)
        self.provider = provider
        logs = CapturedLogs()
        engine = RefreshEngine(
            vault: vault, providers: [provider.name: provider],
            settings: [
                provider.name: ProviderSettings(name: provider.name, kind: "oauth2", planner: planner, limits: limits)
            ],
            options: options, logger: logs.logger)
    }

    /// Stores a credential whose access token lives `lifetime` seconds.
    @discardableResult
    func store(
        _ name: String, lifetime: Double = 3600, refreshToken: String? = nil, provider: String? = nil
    ) async throws -> (CredentialID, CredentialMetadata) {
        let id = try CredentialID("tests/\(name)")
        let payload = TokenPayload(
            kind: .oauth2,
            secrets: CredentialSecrets(
                accessToken: SecretBytes(utf8: "at-initial-\(name)"),
                refreshToken: SecretBytes(utf8: refreshToken ?? "rt-initial-\(name)")),
            tokenType: "Bearer", expiry: .after(seconds: lifetime))
        return (id, try await vault.put(id, payload: payload, provider: provider ?? self.provider.name))
    }

    func metadata(_ id: CredentialID) async throws -> CredentialMetadata { try await vault.metadata(id) }

    /// Journals an attempt of `owner` for `id` at `generation` that presented `refreshToken` and
    /// was never closed (a process stopped, or a storage error, between journalling and commit).
    func journalOpenAttempt(
        _ id: CredentialID, generation: Int64, refreshToken: String, owner: String, attemptID: String = "left-open"
    ) async throws {
        let open = RefreshAttempt(
            attemptID: attemptID, credentialID: id, generation: generation,
            refreshTokenFingerprint: testVault.keyring.fingerprint(SecretBytes(utf8: refreshToken)),
            leaseOwner: owner, leaseExpiresAt: Timestamp.now().adding(seconds: 60), startedAt: Timestamp.now())
        try await testVault.database.write(durability: .full) { try await $0.beginAttempt(open) }
    }

    func secrets(_ id: CredentialID) async throws -> CredentialSecrets { try await vault.credential(id).secrets }
}

/// Collects log lines in memory so tests can assert what was (and was not) logged.
final class CapturedLogs: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    var text: String { lock.withLock { lines.joined(separator: "\n") } }

    var logger: Logger {
        var logger = Logger(label: "test") { _ in Handler(sink: self) }
        logger.logLevel = .trace
        return logger
    }

    fileprivate func append(_ line: String) { lock.withLock { lines.append(line) } }

    private struct Handler: LogHandler {
        let sink: CapturedLogs
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            sink.append("\(event.level) \(event.message) \(merged.sorted { $0.key < $1.key })")
        }
    }
}
