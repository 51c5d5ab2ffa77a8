import Foundation
import Logging
import TokenVaultCore
import TokenVaultCourier
import TokenVaultCrypto
import TokenVaultEngine
import TokenVaultLedger
import TokenVaultServer
import TokenVaultStorage
import TokenVaultTesting

/// Everything the `refresh` benchmark runs, in this process, wired as `tokenvault serve` wires
/// it: a fresh vault (SQLite file, keyring with a random master key), the provider side
/// (`TokenSource`) and a `RefreshEngine` with the real clock and generous provider limits.
/// The scheduler is started by the caller.
final class RefreshRig: Sendable {
    struct Settings: Sendable {
        var concurrency = 64
        var maximumInFlight = 256
        /// Access-token lifetime the provider grants, in whole seconds; the engine plans the next
        /// refresh after about half of it (lifetimes under two minutes), so credentials stay due.
        var lifetime = 1
        var durability: Durability? = nil
        var provider = ProviderChoice.loopback
        /// The loopback server over HTTPS (a test CA the provider trusts through `ca_file`).
        var tls = false
        /// The provider's `keep_alive_seconds` (nil: its default; 0: a connection per call).
        var keepAliveSeconds: Double?
    }

    /// What answers the engine's refreshes.
    enum ProviderChoice: String, Sendable {
        /// `OAuth2Provider` against the loopback test server, through the courier (this binary
        /// started as `courier`): what the daemon runs.
        case loopback
        /// The same, sent from this process without a courier: the courier's cost, a comparison.
        case direct
        /// Experiment: the loopback server through kept-alive connections (`KeepAliveProvider`).
        case keepalive
        /// Comparison: no HTTP at all (`InMemoryProvider`).
        case memory
    }

    static let providerName = "idp"

    /// Concurrency as asked, and a rate limit of 100,000/s that never binds.
    static func generousLimits(concurrency: Int) -> ProviderLimits {
        ProviderLimits(concurrency: concurrency, ratePerSecond: 100_000, burst: 100_000)
    }

    let source: any TokenSource
    let directory: String
    private let temporary: TemporaryDirectory?
    let database: SQLiteDatabase
    let store: InstrumentedStore
    let keyring: Keyring
    let vault: Vault
    let engine: RefreshEngine
    let courier: CourierClient?
    let phases = PhaseRecorder()

    init(settings: Settings, dataDir: String?) async throws {
        if let dataDir {
            try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
            guard !FileManager.default.fileExists(atPath: dataDir + "/vault.db") else {
                throw BenchError("\(dataDir) already holds a vault; the refresh benchmark needs a fresh one")
            }
            temporary = nil
            directory = dataDir
        } else {
            temporary = TemporaryDirectory("tokenvault-refreshbench")
            directory = temporary!.path
        }
        umask(0o077)
        database = try SQLiteDatabase(path: directory + "/vault.db", checksum: { SHA256.hex($0) })
        try database.migrate()
        keyring = try Keyring.bootstrap(masterKey: SodiumRandom.secret(count: 32), store: database)
        store = InstrumentedStore(database, durability: settings.durability)
        let planner = RefreshPlanner()
        vault = Vault(store: store, sealer: keyring)

        var logger = Logger(label: "refreshbench") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .warning
        let providerSettings: ProviderSettings
        var courierClient: CourierClient?
        if settings.provider == .memory {
            source = InMemoryProvider(lifetime: settings.lifetime)
            providerSettings = ProviderSettings(
                name: Self.providerName, kind: "oauth2", planner: planner,
                limits: Self.generousLimits(concurrency: settings.concurrency))
        } else if settings.provider == .loopback {
            // As `tokenvault serve` runs: this binary started again as the courier.
            let spool = directory + "/spool"
            let client = CourierClient(
                spool: Spool(directory: spool), arguments: ["courier", "--spool", spool], readyTimeout: 30,
                logger: logger)
            let loopback = try await LoopbackSource(
                lifetime: settings.lifetime, concurrency: settings.concurrency, directory: directory, planner: planner,
                transport: client.transportMaker, tls: settings.tls ? try await TestPKI.make() : nil,
                keepAliveSeconds: settings.keepAliveSeconds)
            try await client.start(keyring: keyring)
            courierClient = client
            source = loopback
            providerSettings = loopback.settings
        } else {
            let loopback = try await LoopbackSource(
                lifetime: settings.lifetime, concurrency: settings.concurrency, directory: directory, planner: planner,
                keepAlive: settings.provider == .keepalive)
            source = loopback
            providerSettings = loopback.settings
        }
        courier = courierClient
        let phases = phases
        engine = RefreshEngine(
            vault: vault, providers: [Self.providerName: source.tokenProvider],
            settings: [Self.providerName: providerSettings],
            options: RefreshEngine.Options(maximumInFlight: settings.maximumInFlight, timings: { phases.record($0) }),
            settlement: courier ?? NoSettlement(), logger: logger)
    }

    /// Stores `count` credentials whose tokens the provider issued, all due now, 1,000 per
    /// NORMAL transaction of the ledger's bulk import. Each is dated as issued ten seconds (plus
    /// up to one) ago with a lifetime reaching `lifetime` seconds past now, so the planner puts
    /// its `refresh_at` in the past while its token is still valid.
    func seed(count: Int, lifetime: Int) async throws {
        let now = Timestamp.now()
        var next = 0
        while next < count {
            let end = min(count, next + 1000)
            let batch = try (next..<end).map { index in
                let issued = source.issue(lifetime: Double(lifetime))
                return Vault.NewCredential(
                    id: try CredentialID(namespace: "bench", name: "c\(index)"),
                    payload: TokenPayload(
                        kind: .oauth2,
                        secrets: CredentialSecrets(
                            accessToken: SecretBytes(utf8: issued.accessToken),
                            refreshToken: SecretBytes(utf8: issued.refreshToken)),
                        tokenType: "Bearer", expiry: .at(now.adding(seconds: Double(lifetime)))),
                    provider: Self.providerName, issuedAt: now.adding(seconds: -10 - Double(index % 1000) / 1000))
            }
            try await vault.importCredentials(batch, durability: .normal)
            next = end
        }
    }

    /// After the run: for every credential, whether the refresh token the vault holds is the
    /// one the provider will accept next (not spent, not revoked), and the generations summed.
    func verify(count: Int) async throws -> (live: Int, notLive: [String], refreshesStored: Int) {
        var live = 0
        var notLive: [String] = []
        var refreshesStored = 0
        for index in 0..<count {
            let id = try CredentialID(namespace: "bench", name: "c\(index)")
            let credential = try await vault.credential(id, opening: [.refreshToken])
            refreshesStored += Int(credential.metadata.generation) - 1
            if let token = credential.secrets.refreshToken?.revealString(), source.isLive(token) {
                live += 1
            } else {
                notLive.append(id.description)
            }
        }
        return (live, notLive, refreshesStored)
    }

    /// The database file's size after a WAL checkpoint, in bytes.
    func checkpointedSize() throws -> Int {
        try database.checkpoint()
        let attributes = try FileManager.default.attributesOfItem(atPath: database.path)
        return (attributes[.size] as? NSNumber)?.intValue ?? 0
    }

    func shutdown() async {
        await courier?.stop()
        await source.shutdown()
        database.close()
    }
}
