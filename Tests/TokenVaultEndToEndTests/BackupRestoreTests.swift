import Foundation
import Testing
import TokenVaultCrypto
import TokenVaultTesting

@testable import TokenVaultStorage

#if canImport(Glibc)
    import Glibc
#endif

/// The operator's drill with the built binary: back up online, destroy, restore, verify; a wrong
/// key or a running daemon is refused with nothing replaced. Also `tokenvault status`.
@Suite struct BackupRestoreTests {
    let directory = TemporaryDirectory("tokenvault-backup")
    let cli = CommandRunner()
    var dataDir: String { directory.file("data") }
    var socket: String { dataDir + "/run/tokenvault.sock" }
    var database: String { dataDir + "/vault.db" }

    init() throws {
        _ = try cli.run(["init", "--data-dir", dataDir])
    }

    func run(_ arguments: [String], stdin: String? = nil) throws -> CommandRunner.Result {
        try cli.run(arguments + ["--data-dir", dataDir], stdin: stdin)
    }

    func startDaemon() throws -> DaemonProcess {
        try DaemonProcess(arguments: ["--data-dir", dataDir], socketPath: socket, logDirectory: directory.path)
    }

    /// What must survive the round trip, row for row: credentials (sealed), key terms (wrapped)
    /// and the audit trail. Read from a copy, since opening a database file may change it.
    func rows(of path: String) async throws -> [String] {
        let copy = directory.file("inspect-\(UUID().uuidString.prefix(8)).db")
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        let database = try SQLiteDatabase(path: copy, checksum: SHA256.hex)
        defer { database.close() }
        return await [
            String(describing: try database.records(after: nil, limit: 1000)),
            String(describing: try database.terms()),
            String(describing: try database.auditEvents(after: nil, credentialID: nil, limit: 100_000)),
        ]
    }

    @Test func backUpOnlineDestroyRestoreAndVerify() async throws {
        let daemon = try startDaemon()
        let alice = SamplePayloads.tinkoff()
        for (name, sample) in [
            ("alice", alice), ("bob", SamplePayloads.tinkoff()), ("carol", SamplePayloads.tinkoff()),
        ] {
            let put = try run(
                ["put", "payments/\(name)", "--provider", "tinkoff-id", "--socket", socket], stdin: sample.json)
            #expect(put.status == 0, "\(put.stderr)")
        }
        let rotated = try run(["rotate-key"])
        #expect(rotated.status == 0, "through the daemon; the backup holds term 2 only: \(rotated.stderr)")

        let status = try run(["status", "--socket", socket])
        #expect(status.status == 0, "\(status.stdout) \(status.stderr)")
        #expect(status.stdout.contains("daemon:        up (ok)"))
        #expect(status.stdout.contains("credentials:   3 (active 3)"))
        #expect(status.stdout.contains("database:      sqlite"))
        let json = try run(["status", "--json", "--socket", socket])
        let document = try #require(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect((document["credentials"] as? [String: Int])?["active"] == 3)
        #expect(document["next_refresh_at"] is String)
        #expect(((document["audit"] as? [String: Any])?["rows"] as? Int ?? 0) > 0)

        let backup = directory.file("drill/vault-backup.db")
        try FileManager.default.createDirectory(atPath: directory.file("drill"), withIntermediateDirectories: true)
        let written = try run(["backup", "--to", backup])
        #expect(written.status == 0, "\(written.stderr)")
        #expect(try FileManager.default.attributesOfItem(atPath: backup)[.posixPermissions] as? Int == 0o600)
        #expect(try run(["backup", "--to", backup]).stderr.contains("already exists"), "never overwrites")

        let refused = try run(["restore", backup])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("Stop the daemon before restoring"), "\(refused.stderr)")
        daemon.terminate()
        #expect(try run(["status", "--socket", socket]).status == 5)
        let inBackup = try await rows(of: backup)
        #expect(inBackup[0].contains("payments/carol") && inBackup[2].contains("credential.put"))

        // A wrong key: refused, and the vault is byte for byte what it was.
        let original = try Data(contentsOf: URL(fileURLWithPath: database))
        let wrongKey = directory.file("wrong.key")
        writeFile(wrongKey, Data((0..<32).map { _ in UInt8.random(in: 0...255) }), permissions: 0o600)
        let wrong = try run(["restore", backup, "--key-file", wrongKey])
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("the backup does not open"), "\(wrong.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: database)) == original)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dataDir).filter { $0.contains("restoring") }
        #expect(leftovers.isEmpty, "\(leftovers)")

        // Destroy, restore, verify.
        for suffix in ["", "-wal", "-shm"] { unlink(database + suffix) }
        let restored = try run(["restore", backup])
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(restored.stdout.contains("3 credentials, key terms 2,"), "\(restored.stdout)")
        #expect(try await rows(of: database) == inBackup, "credentials, terms and audit as they were backed up")
        let verify = try run(["verify"])
        #expect(verify.status == 0, "\(verify.stdout)")
        let served = try startDaemon()
        #expect(try run(["token", "payments/alice", "--socket", socket]).stdout == alice.tokens[0] + "\n")
        served.terminate()

        // Restoring over an existing vault keeps the replaced database aside; run as root for a
        // daemon with its own user, the restored file is that user's.
        let daemonUser: uid_t = 65534
        if getuid() == 0 { chown(dataDir, daemonUser, daemonUser) }
        let again = try run(["restore", backup])
        #expect(again.status == 0)
        var info = stat()
        #expect(stat(database, &info) == 0 && info.st_uid == (getuid() == 0 ? daemonUser : getuid()))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: dataDir).contains { $0.hasPrefix("vault.db.replaced-") }
        )
    }

    @Test func offlineBackupReadsTheFile() throws {
        let result = try run(["backup"])
        #expect(result.status == 0, "\(result.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: dataDir + "/backups")
        #expect(files.count == 1 && files[0].hasPrefix("vault-") && files[0].hasSuffix(".db"))
    }
}
