import Foundation
import Testing
import TokenVaultTesting

/// Runs the real `tokenvault` binary against a data directory per test.
@Suite struct CLITests {
    let directory = TemporaryDirectory("tokenvault-e2e")
    let cli = CommandRunner()
    var dataDir: String { directory.file("data") }
    var keyFile: String { dataDir + "/master.key" }
    var databaseFile: String { dataDir + "/vault.db" }

    @discardableResult
    func run(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) throws
        -> CommandRunner.Result
    {
        try cli.run(arguments + ["--data-dir", dataDir], stdin: stdin, environment: environment)
    }

    func mode(_ path: String) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! Int
    }

    func writePrivate(_ path: String, _ contents: String) {
        FileManager.default.createFile(
            atPath: path, contents: Data(contents.utf8), attributes: [.posixPermissions: 0o600])
    }

    @Test func initCreatesPrivateDirectoryKeyAndDatabase() throws {
        let result = try run(["init"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("generated a new master key at \(keyFile)"))
        #expect(try mode(dataDir) == 0o700)
        #expect(try mode(keyFile) == 0o600)
        #expect(try mode(databaseFile) == 0o600)
        let again = try run(["init"])
        #expect(again.status == 1)
        #expect(again.stderr.contains("already exists"))
    }

    @Test func storeReadListDeleteRoundTrip() throws {
        try run(["init"])
        let sample = SamplePayloads.tinkoff()
        let put = try run(
            ["put", "payments/alice", "--provider", "tinkoff-id", "--label", "env=test", "--json"], stdin: sample.json)
        #expect(put.status == 0, "\(put.stderr)")
        #expect(put.stdout.contains("\"generation\" : 1"))
        let token = try run(["token", "payments/alice"])
        #expect(token.status == 0)
        #expect(token.stdout == sample.tokens[0] + "\n")
        let tokenJSON = try run(["token", "payments/alice", "--json", "--min-ttl", "60"])
        #expect(tokenJSON.stdout.contains("\"token_type\" : \"Bearer\""))
        #expect(!tokenJSON.stdout.contains(sample.tokens[1]), "the refresh token must never leave the vault")
        #expect(try run(["token", "payments/alice", "--min-ttl", "3600"]).status == 1)
        let show = try run(["show", "payments/alice", "--json"])
        let list = try run(["ls"])
        for output in [put.stdout, show.stdout, list.stdout, put.stderr, show.stderr] {
            for secret in sample.tokens { #expect(!output.contains(secret)) }
        }
        #expect(list.stdout.contains("payments/alice") && list.stdout.contains("tinkoff-id"))
        #expect(try run(["rm", "payments/alice"]).status == 0)
        let missing = try run(["show", "payments/alice"])
        #expect(missing.status == 3)
        #expect(missing.stderr.contains("credential payments/alice does not exist"))
    }

    @Test func badInputIsRefusedAndNothingIsWritten() throws {
        try run(["init"])
        let malformed = try run(["put", "ns/a", "--provider", "p"], stdin: "{\"access_token\": ")
        #expect(malformed.status == 1)
        #expect(malformed.stderr.contains("not valid JSON"))
        let negative = try run(["put", "ns/a", "--provider", "p"], stdin: "{\"access_token\":\"x\",\"expires_in\":-5}")
        #expect(negative.stderr.contains("field 'expires_in': must not be negative"))
        #expect(try run(["put", "bad id/x", "--provider", "p"], stdin: "{}").status == 64)
        #expect(try run(["ls", "--json"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[\n\n]")
    }

    @Test func keyFileReadableByOthersIsRefusedUntilChmod600() throws {
        try run(["init"])
        chmod(keyFile, 0o644)
        let refused = try run(["ls"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("key file \(keyFile) can be read by group or others (mode 0644)"))
        #expect(refused.stderr.contains("chmod 600 \(keyFile)"))
        chmod(keyFile, 0o600)
        #expect(try run(["ls"]).status == 0)
    }

    @Test func wrongMasterKeyFailsAndLeavesTheDatabaseBytesUnchanged() throws {
        try run(["init"])
        try run(["put", "ns/a", "--provider", "p"], stdin: SamplePayloads.oauth().json)
        let before = (RawBytes.read(databaseFile), RawBytes.read(databaseFile + "-wal"))
        try FileManager.default.removeItem(atPath: keyFile)
        writePrivate(keyFile, String(repeating: "5a", count: 32) + "\n")
        for command in [["ls"], ["token", "ns/a"], ["verify"], ["rotate-key"], ["put", "ns/b", "--provider", "p"]] {
            let result = try run(command, stdin: SamplePayloads.oauth().json)
            #expect(result.status == 1)
            #expect(result.stderr.contains("master key does not open this vault's data key"), "\(result.stderr)")
            #expect(result.stderr.contains(keyFile))
        }
        #expect(RawBytes.read(databaseFile) == before.0)
        #expect(RawBytes.read(databaseFile + "-wal") == before.1)
    }

    @Test func systemdCredentialsDirectorySuppliesTheKey() throws {
        let credentials = directory.file("credentials")
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: false)
        writePrivate(credentials + "/tokenvault.key", String(repeating: "0f", count: 32))
        let environment = ["CREDENTIALS_DIRECTORY": credentials]
        #expect(try run(["init"], environment: environment).status == 0)
        #expect(!FileManager.default.fileExists(atPath: keyFile), "no key file is generated when systemd supplies one")
        let sample = SamplePayloads.tinkoff()
        try run(["put", "ns/a", "--provider", "p"], stdin: sample.json, environment: environment)
        #expect(try run(["token", "ns/a"], environment: environment).stdout == sample.tokens[0] + "\n")
        let without = try run(["ls"])
        #expect(without.status == 1)
        #expect(without.stderr.contains(keyFile))
    }

    @Test func passphraseProtectedVault() throws {
        let passphrase = directory.file("passphrase")
        writePrivate(passphrase, "a long and correct passphrase\n")
        #expect(try run(["init", "--passphrase-file", passphrase, "--kdf-profile", "interactive"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: keyFile))
        let missing = try run(["ls"])
        #expect(missing.stderr.contains("protected by a passphrase"))
        let wrong = directory.file("wrong")
        writePrivate(wrong, "a long and wrong passphrase")
        #expect(try run(["ls", "--passphrase-file", wrong]).stderr.contains("wrong key file or passphrase"))
        let environment = ["TOKENVAULT_PASSPHRASE_FILE": passphrase]
        try run(["put", "ns/a", "--provider", "p"], stdin: SamplePayloads.ebs().json, environment: environment)
        #expect(try run(["ls"], environment: environment).stdout.contains("ns/a"))
    }

    @Test func rotateKeyThenVerifyIsClean() throws {
        try run(["init"])
        for index in 0..<20 {
            try run(["put", "ns/c\(index)", "--provider", "p"], stdin: SamplePayloads.oauth().json)
        }
        let rotation = try run(["rotate-key", "--batch-size", "3"])
        #expect(rotation.stdout.contains("active data key term: 2"))
        #expect(rotation.stdout.contains("credentials re-sealed: 20"))
        #expect(rotation.stdout.contains("terms removed: 1"))
        let verify = try run(["verify", "--json"])
        #expect(verify.status == 0)
        #expect(verify.stdout.contains("\"ok\" : true") && verify.stdout.contains("\"sealed_fields\" : 80"))
    }

    @Test func rekeyReplacesTheKeyAndAnInterruptedRekeyIsFinished() throws {
        try run(["init"])
        let sample = SamplePayloads.tinkoff()
        try run(["put", "ns/a", "--provider", "p"], stdin: sample.json)
        let oldKey = RawBytes.read(keyFile)
        #expect(try run(["rekey"]).status == 0)
        #expect(RawBytes.read(keyFile) != oldKey)
        #expect(try mode(keyFile) == 0o600)
        #expect(try run(["token", "ns/a"]).stdout == sample.tokens[0] + "\n")

        // Simulate a crash between the re-wrap commit and the rename: the vault is wrapped
        // under a key that still sits in master.key.new.
        let newKey = directory.file("next.key")
        writePrivate(newKey, String(repeating: "c3", count: 32))
        #expect(try run(["rekey", "--new-key-file", newKey]).status == 0)
        try FileManager.default.copyItem(atPath: newKey, toPath: keyFile + ".new")
        let recovered = try run(["token", "ns/a"])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect(recovered.stderr.contains("finished an interrupted rekey"))
        #expect(RawBytes.read(keyFile) == RawBytes.read(newKey))
        #expect(!FileManager.default.fileExists(atPath: keyFile + ".new"))
    }

    @Test func missingVaultNamesTheFixingCommand() throws {
        let result = try run(["ls"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("no vault at \(dataDir)") && result.stderr.contains("tokenvault init"))
    }
}
