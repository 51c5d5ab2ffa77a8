import Foundation
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultTesting

@testable import TokenVaultStorage

@Suite struct MigrationTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("vault.db") }

    static let repositoryMigrations = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("migrations")

    func open(_ migrations: [Migration]? = nil) throws -> SQLiteDatabase {
        try SQLiteDatabase(path: path, migrations: migrations, checksum: SHA256.hex)
    }

    /// The main file and WAL as they are on disk.
    func snapshot() -> [UInt8] { RawBytes.read(path) + [0xff] + RawBytes.read(path + "-wal") }

    @Test func embeddedCopyEqualsTheRepositoryFiles() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.repositoryMigrations.path)
            .filter { $0.hasSuffix(".sql") }.sorted()
        let embedded = try EmbeddedMigrations.all()
        #expect(embedded.map(\.fileName) == files)
        for migration in embedded {
            let onDisk = RawBytes.read(Self.repositoryMigrations.appendingPathComponent(migration.fileName).path)
            #expect(migration.sql == onDisk, "\(migration.fileName) differs from the embedded copy: rebuild")
        }
    }

    static var shipped: [Migration] { (try? EmbeddedMigrations.all()) ?? [] }
    /// The file name of a migration one past the shipped ones (or `offset` past).
    static func nextName(_ suffix: String, offset: Int = 1) -> String {
        let number = String(shipped.count + offset)
        return String(repeating: "0", count: 4 - number.count) + number + "_" + suffix + ".sql"
    }

    @Test func freshDatabaseIsMigratedAndRecordsChecksums() throws {
        let database = try open()
        #expect(try database.pendingMigrations().map(\.version) == Array(1...Self.shipped.count))
        #expect(try database.migrate().map(\.fileName) == Self.shipped.map(\.fileName))
        let applied = try database.appliedMigrations()
        #expect(applied.map(\.name) == Self.shipped.map(\.fileName))
        #expect(applied.map(\.sha256) == Self.shipped.map { SHA256.hex($0.sql) })
        #expect(try database.migrate().isEmpty)
        #expect(try open().pendingMigrations().isEmpty)
    }

    @Test func aVersionOneDatabaseUpgradesInPlace() throws {
        let first = try open(Array(Self.shipped.prefix(1)))
        try first.migrate()
        try first.withWriter {
            try $0.execute("INSERT INTO vault_meta VALUES ('upgrade-marker', 'kept')")
        }
        first.close()
        let upgraded = try open()
        #expect(try upgraded.migrate().map(\.version) == Array(2...Self.shipped.count))
        let kept = try upgraded.withWriter {
            try $0.scalarText("SELECT value FROM vault_meta WHERE key = 'upgrade-marker'")
        }
        #expect(kept == "kept")
    }

    @Test func changedShippedMigrationIsRefusedNamingTheFile() throws {
        try open().migrate()
        let original = try EmbeddedMigrations.all()[0]
        let edited = try Migration(fileName: original.fileName, sql: original.sql + Array("\n-- edited\n".utf8))
        let before = snapshot()
        #expect {
            _ = try open([edited] + Self.shipped.dropFirst())
        } throws: { error in
            let error = error as! VaultError
            return error.code == .migrationError && error.message.contains("0001_initial.sql")
                && error.message.contains("changed after it was applied")
        }
        #expect(snapshot() == before)
    }

    @Test func databaseFromANewerBinaryIsRefused() throws {
        let database = try open()
        try database.migrate()
        try database.withWriter {
            try $0.execute(
                "INSERT INTO schema_migrations VALUES (\(Self.shipped.count + 1), '\(Self.nextName("future_feature"))', "
                    + "'\(String(repeating: "0", count: 64))', 0)")
        }
        database.close()
        let before = snapshot()
        #expect {
            _ = try open()
        } throws: { error in
            let message = (error as! VaultError).message
            return message.contains("newer than this binary") && message.contains(Self.nextName("future_feature"))
        }
        #expect(snapshot() == before)
    }

    @Test func failingMigrationIsRolledBackWhole() throws {
        let broken = try Migration(
            fileName: Self.nextName("broken"),
            sql: Array("CREATE TABLE half_done (a INTEGER); SELECT no_such_function();".utf8))
        let database = try open(try EmbeddedMigrations.all() + [broken])
        #expect {
            try database.migrate()
        } throws: { ($0 as! VaultError).message.contains("\(Self.nextName("broken")) failed and was rolled back") }
        #expect(try database.appliedMigrations().map(\.version) == Array(1...Self.shipped.count))
        let exists = try database.withWriter {
            try $0.statement("SELECT 1 FROM sqlite_master WHERE name = 'half_done'").exists()
        }
        #expect(!exists)
    }

    @Test(arguments: ["1_short.sql", "0001-dash.sql", "0001_Upper.sql", "0001_x.txt"])
    func badFileNamesAreRefused(_ name: String) {
        #expect(throws: VaultError.self) { _ = try Migration(fileName: name, sql: []) }
    }

    @Test func gapsInNumberingAreRefused() throws {
        let third = try Migration(fileName: Self.nextName("skip", offset: 2), sql: [])
        #expect {
            _ = try open(try EmbeddedMigrations.all() + [third])
        } throws: { ($0 as! VaultError).message.contains("without gaps") }
    }
}
