import Foundation
import Testing
import TokenVaultTesting

/// `tokenvault migrate-store` with the built binary: a SQLite vault moved to PostgreSQL and back,
/// every row still sealed, served unchanged by a daemon on the copy; a second run refused
/// without --force; a wrong key refused before anything is written.
@Suite struct MigrateStoreTests {
    let directory = TemporaryDirectory("tokenvault-migrate-store")
    let cli = CommandRunner()
    let server: TestPostgres
    let url: String
    let passwordFile: String
    var sqliteDir: String { directory.file("sqlite") }
    var keyFile: String { sqliteDir + "/master.key" }

    init() async throws {
        (server, url, passwordFile) = try await TestPostgres.makeDatabaseWithPasswordFile(in: directory)
    }

    func migrate(_ from: String, _ to: String, key: String? = nil, force: Bool = false) throws -> CommandRunner.Result {
        try cli.run(
            ["migrate-store", "--from", from, "--to", to, "--key-file", key ?? keyFile]
                + ["--storage-password-file", passwordFile] + (force ? ["--force"] : []))
    }

    func verify(_ arguments: [String]) throws -> [String: Any] {
        let result = try cli.run(
            ["verify", "--json", "--key-file", keyFile, "--storage-password-file", passwordFile] + arguments)
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] ?? [:]
    }

    @Test func aVaultMovesToPostgresAndBackUnchanged() async throws {
        // A SQLite vault with credentials, audit rows and a rotated key term.
        #expect(try cli.run(["init", "--data-dir", sqliteDir]).status == 0)
        var samples: [String: String] = [:]
        do {
            let daemon = try DaemonProcess(
                arguments: ["--data-dir", sqliteDir], socketPath: sqliteDir + "/run/tokenvault.sock",
                logDirectory: directory.path)
            defer { daemon.terminate() }
            for index in 0..<12 {
                let sample = SamplePayloads.tinkoff()
                let put = try cli.run(
                    ["put", "pay/c\(index)", "--provider", "tinkoff-id", "--socket", daemon.socketPath],
                    stdin: sample.json)
                #expect(put.status == 0, "\(put.stderr)")
                samples["pay/c\(index)"] = sample.tokens[0]
                if index == 5 {
                    let rotated = try UnixSocketHTTP.request(
                        daemon.socketPath, "POST", "/v1/admin/rotate-key", body: "{}")
                    #expect(rotated.status == 200 || rotated.status == 202, "\(rotated.text)")
                }
            }
            #expect(try cli.run(["token", "pay/c1", "--socket", daemon.socketPath]).status == 0)
        }
        let original = try verify(["--data-dir", sqliteDir])

        // SQLite -> PostgreSQL: counts, every field opened, the audit chain intact.
        let toPostgres = try migrate("sqlite:\(sqliteDir)/vault.db", url)
        #expect(toPostgres.status == 0, "\(toPostgres.stdout) \(toPostgres.stderr)")
        #expect(toPostgres.stdout.contains("12 credentials"), "\(toPostgres.stdout)")
        #expect(toPostgres.stdout.contains("chain intact"), "\(toPostgres.stdout)")
        #expect(
            !toPostgres.stdout.contains(TestPostgres.password) && !toPostgres.stderr.contains(TestPostgres.password))
        let onPostgres = try verify(["--storage-url", url])
        for key in ["credentials", "sealed_fields", "key_terms", "audit_rows"] {
            #expect("\(onPostgres[key] ?? "-")" == "\(original[key] ?? "+")", "\(key): \(onPostgres) vs \(original)")
        }

        // A second run finds the vault there and refuses, changing nothing; --force replaces it.
        let again = try migrate("sqlite:\(sqliteDir)/vault.db", url)
        #expect(again.status == 1 && again.stderr.contains("--force"), "\(again.stderr)")
        #expect(again.stderr.contains("12 credentials"), "\(again.stderr)")
        let forced = try migrate("sqlite:\(sqliteDir)/vault.db", url, force: true)
        #expect(forced.status == 0, "\(forced.stderr)")

        // A wrong key is refused before anything is written.
        let wrongKey = directory.file("wrong.key")
        writeFile(wrongKey, Data(String(repeating: "ab", count: 32).utf8), permissions: 0o600)
        let back = directory.file("back")
        let refused = try migrate(url, "sqlite:\(back)/vault.db", key: wrongKey)
        #expect(refused.status == 1 && refused.stderr.contains("wrong_master_key"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: back + "/vault.db"))

        // PostgreSQL -> a new SQLite file (its directory made private), served by a daemon there:
        // the same tokens.
        let toSQLite = try migrate(url, "sqlite:\(back)/vault.db")
        #expect(toSQLite.status == 0, "\(toSQLite.stdout) \(toSQLite.stderr)")
        let onSQLite = try verify(["--data-dir", back])
        #expect("\(onSQLite["sealed_fields"] ?? "-")" == "\(original["sealed_fields"] ?? "+")")
        try FileManager.default.copyItem(atPath: keyFile, toPath: back + "/master.key")
        let daemon = try DaemonProcess(
            arguments: ["--data-dir", back], socketPath: back + "/run/tokenvault.sock", logDirectory: directory.path)
        defer { daemon.terminate() }
        for (id, token) in samples {
            let served = try cli.run(["token", id, "--socket", daemon.socketPath])
            #expect(served.stdout == token + "\n", "\(id): \(served.stderr)")
        }
    }
}
