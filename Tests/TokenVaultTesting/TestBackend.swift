import Foundation
import Logging
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
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
    /// The PostgreSQL server and database (nil for SQLite).
    public let server: TestPostgres?
    public let postgresDatabase: String?

    /// A fresh vault; on PostgreSQL a new database on the shared test server.
    public static func make(_ kind: TestBackendKind, caller: String = #fileID) async throws -> TestBackendVault {
        let postgres = kind == .postgres ? try await TestPostgres.makeDatabase(caller: caller) : nil
        return try TestBackendVault(kind, postgres: postgres)
    }

    /// A fresh PostgreSQL vault on `server` (a dedicated one).
    public static func make(on server: TestPostgres) async throws -> TestBackendVault {
        try TestBackendVault(.postgres, postgres: (server, try await server.makeDatabaseAsync()))
    }

    private init(_ kind: TestBackendKind, postgres: (TestPostgres, String)?) throws {
        self.kind = kind
        directory = TemporaryDirectory()
        masterKey = SodiumRandom.secret(count: 32)
        clock = FakeClock(Timestamp.now())
        server = postgres?.0
        postgresDatabase = postgres?.1
        backend = try Self.open(kind, directory: directory, server: server, database: postgresDatabase, clock: clock)
        try backend.migrate()
        keyring = try Keyring.bootstrap(masterKey: masterKey, store: backend, clock: clock)
        vault = Vault(
            store: backend, sealer: keyring, clock: clock,
            options: Self.options(backend, auditChain: Self.chain(kind)))
    }

    /// The daemon's group commit for `backend` (`OpenedVault`): its group size, transactions at
    /// once and whether unclaimed writes share them.
    static func options(_ backend: any VaultBackend, auditChain: String) -> Vault.Options {
        Vault.Options(
            maximumGroup: backend.writesPerTransaction, concurrentTransactions: backend.concurrentWriteTransactions,
            groupsUnclaimedWrites: backend.groupsUnclaimedWrites, auditChain: auditChain)
    }

    /// The audit chain of the first vault: "" on SQLite (one writer), a node's on PostgreSQL.
    static func chain(_ kind: TestBackendKind) -> String { kind == .postgres ? "node-1" : "" }

    /// The same database opened again: a restarted process (the same audit chain), or another
    /// node (pass its own chain).
    /// `cacheBytes`: the bound of the opening's cache of rows (nil: the default). A second
    /// opening of a SQLite file stands for another process, which a daemon's lock keeps out
    /// while it serves; with a cache it would see other openings' writes only on rows it has not
    /// cached, so tests of that give it none.
    public func open(auditChain: String? = nil, cacheBytes: Int? = nil) throws -> (
        backend: any VaultBackend, vault: Vault
    ) {
        let backend = try Self.open(
            kind, directory: directory, server: server, database: postgresDatabase, clock: clock,
            cacheBytes: cacheBytes)
        let keyring = try Keyring(masterKey: masterKey, store: backend, clock: clock)
        let options = Self.options(backend, auditChain: auditChain ?? Self.chain(kind))
        return (
            backend,
            Vault(store: backend, sealer: keyring, clock: clock, options: options)
        )
    }

    private static func open(
        _ kind: TestBackendKind, directory: TemporaryDirectory, server: TestPostgres?, database: String?,
        clock: FakeClock, cacheBytes: Int? = nil
    ) throws -> any VaultBackend {
        switch (kind, server) {
        case (.sqlite, _), (.postgres, nil):
            return try SQLiteDatabase(
                path: directory.file("vault.db"), checksum: SHA256.hex, clock: clock,
                cacheBytes: cacheBytes ?? SQLiteDatabase.defaultCacheBytes)
        case (.postgres, let server?):
            var configuration = try PostgresDatabase.Configuration(
                url: server.socketURL(database: database ?? "postgres"), password: nil)
            if let cacheBytes { configuration.cacheBytes = cacheBytes }
            return try PostgresDatabase(
                configuration: configuration, checksum: SHA256.hex, clock: clock,
                logger: Logger(label: "test-postgres"))
        }
    }
}
