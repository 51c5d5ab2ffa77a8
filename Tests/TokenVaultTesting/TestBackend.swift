import Foundation
import Logging
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultStorage

/// The two storage backends, for suites that run the same tests on both.
public enum TestBackendKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres
}

extension TestBackendKind {
    public var description: String { rawValue }
}

/// A vault on a fresh database of either backend: a SQLite file in a temporary directory, or a
/// new database on the test process's PostgreSQL (`TestPostgres`). `open()` makes another
/// process's view of the same database (a second node).
public struct TestBackendVault: Sendable {
    public let kind: TestBackendKind
    public let directory: TemporaryDirectory
    public let masterKey: SecretBytes
    public let clock: FakeClock
    public let backend: any VaultBackend
    public let keyring: Keyring
    public let vault: Vault
    /// The PostgreSQL database's name (nil for SQLite).
    public let postgresDatabase: String?

    public init(_ kind: TestBackendKind) throws {
        self.kind = kind
        directory = TemporaryDirectory()
        masterKey = SodiumRandom.secret(count: 32)
        clock = FakeClock(Timestamp.now())
        postgresDatabase = kind == .postgres ? try TestPostgres.shared().makeDatabase() : nil
        backend = try Self.open(kind, directory: directory, database: postgresDatabase, clock: clock)
        try backend.migrate()
        keyring = try Keyring.bootstrap(masterKey: masterKey, store: backend, clock: clock)
        vault = Vault(store: backend, sealer: keyring, clock: clock)
    }

    /// The same database opened again (another node, or a restarted process).
    public func open() throws -> (backend: any VaultBackend, vault: Vault) {
        let backend = try Self.open(kind, directory: directory, database: postgresDatabase, clock: clock)
        let keyring = try Keyring(masterKey: masterKey, store: backend, clock: clock)
        return (backend, Vault(store: backend, sealer: keyring, clock: clock))
    }

    private static func open(
        _ kind: TestBackendKind, directory: TemporaryDirectory, database: String?, clock: FakeClock
    ) throws -> any VaultBackend {
        switch kind {
        case .sqlite:
            return try VaultDatabase(path: directory.file("vault.db"), checksum: SHA256.hex, clock: clock)
        case .postgres:
            let server = try TestPostgres.shared()
            let configuration = try PostgresDatabase.Configuration(
                url: server.socketURL(database: database ?? "postgres"), password: nil)
            return try PostgresDatabase(
                configuration: configuration, checksum: SHA256.hex, clock: clock,
                logger: Logger(label: "test-postgres"))
        }
    }
}
