import Foundation
import Testing
import TokenVaultCrypto
import TokenVaultSystem
import TokenVaultTesting

@testable import TokenVaultStorage

/// The real `tokenvault` binary: operator commands on the database, and the client commands
/// against a real daemon started from the same binary.
@Suite struct CLITests {
    let directory = TemporaryDirectory("tokenvault-e2e")
    let cli = CommandRunner()
    var dataDir: String { directory.file("data") }
    var keyFile: String { dataDir + "/master.key" }
    var databaseFile: String { dataDir + "/vault.db" }
    var socket: String { dataDir + "/run/tokenvault.sock" }

    @discardableResult
    func run(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) throws
        -> CommandRunner.Result
    {
        try cli.run(arguments + ["--data-dir", dataDir], stdin: stdin, environment: environment)
    }

    func startDaemon(environment: [String: String] = [:]) throws -> DaemonProcess {
        try DaemonProcess(
            arguments: ["--data-dir", dataDir], socketPath: socket, logDirectory: directory.path,
            environment: environment)
    }

    /// Runs `body` with a daemon serving this data directory, then stops it.
    func withDaemon(environment: [String: String] = [:], _ body: () throws -> Void) throws {
        let daemon = try startDaemon(environment: environment)
        defer { daemon.terminate() }
        try body()
    }

    func mode(_ path: String) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! Int
    }

    func writePrivate(_ path: String, _ contents: String) {
        writeFile(path, Data(contents.utf8), permissions: 0o600)
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
        let key = try Data(contentsOf: URL(fileURLWithPath: keyFile))
        let startUp = try run(["init", "--if-missing"])
        #expect(startUp.status == 0, "a service's start-up step succeeds on an existing vault")
        #expect(startUp.stdout.contains("already exists"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: keyFile)) == key, "and changes nothing")

        // A vault that served here (its spool) and is gone is not replaced by an empty one.
        try FileManager.default.createDirectory(atPath: dataDir + "/spool", withIntermediateDirectories: true)
        for suffix in ["", "-wal", "-shm"] { unlink(databaseFile + suffix) }
        let lost = try run(["init", "--if-missing"])
        #expect(lost.status == 1)
        #expect(lost.stderr.contains("a vault was here before (spool)"), "\(lost.stderr)")
        #expect(!FileManager.default.fileExists(atPath: databaseFile))
    }

    @Test func keyFileReadableByOthersIsRefusedUntilChmod600() throws {
        try run(["init"])
        chmod(keyFile, 0o644)
        for command in [["verify"], ["serve"]] {
            let refused = try run(command)
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("key file \(keyFile) can be read by group or others (mode 0644)"))
            #expect(refused.stderr.contains("chmod 600 \(keyFile)"))
        }
        chmod(keyFile, 0o600)
        #expect(try run(["verify"]).status == 0)
    }

    @Test func wrongMasterKeyFailsAndLeavesTheDatabaseBytesUnchanged() throws {
        try run(["init"])
        try withDaemon {
            let put = try run(["put", "ns/a", "--provider", "oauth2"], stdin: SamplePayloads.oauth().json)
            #expect(put.status == 0)
        }
        let before = (RawBytes.read(databaseFile), RawBytes.read(databaseFile + "-wal"))
        try FileManager.default.removeItem(atPath: keyFile)
        writePrivate(keyFile, String(repeating: "5a", count: 32) + "\n")
        for command in [["verify"], ["rotate-key"], ["serve"]] {
            let result = try run(command)
            #expect(result.status == 1)
            #expect(result.stderr.contains("wrong key file or passphrase"), "\(result.stderr)")
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
        try withDaemon(environment: environment) {
            try run(["put", "ns/a", "--provider", "tinkoff-id"], stdin: sample.json)
            #expect(try run(["token", "ns/a"]).stdout == sample.tokens[0] + "\n")
        }
        let without = try run(["verify"])
        #expect(without.status == 1)
        #expect(without.stderr.contains(keyFile))
    }

    /// The copy in `$CREDENTIALS_DIRECTORY` is private whatever its source's mode; the source
    /// named by `TOKENVAULT_KEY_SOURCE` is checked as a key file is.
    @Test func aKeySourceReadableByItsGroupIsRefusedWithTheFix() throws {
        let credentials = directory.file("credentials")
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: false)
        let key = String(repeating: "0f", count: 32)
        writePrivate(credentials + "/tokenvault.key", key)
        let source = directory.file("source.key")
        writePrivate(source, key)
        chmod(source, 0o640)
        let environment = ["CREDENTIALS_DIRECTORY": credentials, "TOKENVAULT_KEY_SOURCE": source]
        func expectRefused(_ command: [String]) throws {
            let refused = try run(command, environment: environment)
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("\(source) can be read by group or others"), "\(refused.stderr)")
            #expect(refused.stderr.contains("Fix: chmod 600 \(source)"), "\(refused.stderr)")
        }
        try expectRefused(["init"])
        #expect(!FileManager.default.fileExists(atPath: databaseFile), "nothing was created")
        chmod(source, 0o600)
        #expect(try run(["init"], environment: environment).status == 0)
        chmod(source, 0o604)
        try expectRefused(["serve"])
        chmod(source, 0o600)
        #expect(try run(["verify"], environment: environment).status == 0)
        unlink(source)
        #expect(try run(["verify"], environment: environment).stderr.contains("cannot be examined"))
    }

    @Test func passphraseProtectedVault() throws {
        let passphrase = directory.file("passphrase")
        writePrivate(passphrase, "a long and correct passphrase\n")
        #expect(try run(["init", "--passphrase-file", passphrase, "--kdf-profile", "interactive"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: keyFile))
        #expect(try run(["verify"]).stderr.contains("protected by a passphrase"))
        let wrong = directory.file("wrong")
        writePrivate(wrong, "a long and wrong passphrase")
        #expect(try run(["verify", "--passphrase-file", wrong]).stderr.contains("wrong key file or passphrase"))
        let environment = ["TOKENVAULT_PASSPHRASE_FILE": passphrase]
        try withDaemon(environment: environment) {
            let put = try run(["put", "ns/a", "--provider", "ebs"], stdin: SamplePayloads.ebs().json)
            #expect(put.status == 0)
        }
        #expect(try run(["verify"], environment: environment).stdout.contains("credentials: 1"))
    }

    @Test func rotateKeyThenVerifyIsClean() throws {
        try run(["init"])
        try withDaemon {
            for index in 0..<20 {
                try run(["put", "ns/c\(index)", "--provider", "oauth2"], stdin: SamplePayloads.oauth().json)
            }
            // Rotation from the CLI while the daemon serves the same database.
            let rotation = try run(["rotate-key", "--batch-size", "3"])
            #expect(rotation.stdout.contains("active data key term: 2"))
            #expect(rotation.stdout.contains("credentials re-sealed: 20"))
            #expect(rotation.stdout.contains("terms removed: 1"))
            #expect(try run(["token", "ns/c7"]).status == 0, "the daemon picks up the new term")
        }
        let verify = try run(["verify", "--json"])
        #expect(verify.status == 0)
        #expect(verify.stdout.contains("\"ok\" : true") && verify.stdout.contains("\"sealed_fields\" : 80"))
    }

    /// The audit trail of a real daemon verifies; a row edited or removed in the database file
    /// makes `verify` fail, naming the row.
    @Test func verifyNamesAnAuditRowEditedOrRemovedInTheFile() throws {
        try run(["init"])
        try withDaemon {
            for index in 0..<3 {
                try run(["put", "ns/c\(index)", "--provider", "oauth2"], stdin: SamplePayloads.oauth().json)
            }
            for _ in 0..<20 { try run(["token", "ns/c1"]) }
        }
        let clean = try run(["verify", "--json"])
        #expect(clean.status == 0 && clean.stdout.contains("\"ok\" : true"), "\(clean.stdout)")
        // Three puts and the twenty reads of one process after another (one row each: a CLI
        // process reads once).
        #expect(clean.stdout.contains("\"audit_rows\" : 23"), "\(clean.stdout)")

        let database = try SQLiteDatabase(path: databaseFile, checksum: SHA256.hex)
        try database.withWriter { try $0.execute("UPDATE audit_events SET outcome = 'denied' WHERE id = 2") }
        var tampered = try run(["verify"])
        #expect(tampered.status == 4)
        #expect(tampered.stdout.contains("audit row 2 was edited"), "\(tampered.stdout)")

        try database.withWriter { try $0.execute("DELETE FROM audit_events WHERE id IN (10, 11)") }
        tampered = try run(["verify"])
        #expect(tampered.stdout.contains("audit rows 10-11 were removed"), "\(tampered.stdout)")
        database.close()
    }

    /// A subject from a provider's id token with terminal escapes (clear the screen, set the
    /// window title) is printed by `show` and `ls` as visible escapes, never as raw bytes.
    @Test func showAndListPrintControlCharactersAsEscapes() throws {
        try run(["init"])
        let claims = Data(#"{"sub":"\u001b]0;owned\u0007\u001b[2Jeve\u202e"}"#.utf8).base64EncodedString()
            .replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
        let payload = #"{"access_token": "at", "id_token": "eyJhbGciOiJub25lIn0.\#(claims).sig", "expires_in": 600}"#
        try withDaemon {
            let put = try run(["put", "ns/evil", "--provider", "oauth2"], stdin: payload)
            try #require(put.status == 0, "\(put.stderr)")
            for command in [["show", "ns/evil"], ["ls"]] {
                let output = try run(command)
                #expect(output.status == 0)
                #expect(
                    !output.stdout.unicodeScalars.contains {
                        $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x202E
                    })
                if command[0] == "show" {
                    #expect(output.stdout.contains(#"\x1B]0;owned\x07\x1B[2Jeve\u{202E}"#), "\(output.stdout)")
                }
            }
        }
    }

    /// A daemon that cannot start its courier (here: the spool lock is held, as by a courier
    /// of an earlier daemon that never finishes) serves what is stored while it waits for it,
    /// then stops, saying why (10 s: the longest call deadline, none here, and 10 s).
    @Test func aDaemonWithoutACourierStopsSayingWhy() async throws {
        try run(["init"])
        try FileManager.default.createDirectory(atPath: dataDir + "/spool", withIntermediateDirectories: true)
        do {
            let lock = try #require(try FileLock.exclusive(dataDir + "/spool/courier.lock", wait: false))
            let started = Date()
            let daemon = try startDaemon()
            #expect(try await waitUntil(within: 60) { !daemon.process.isRunning }, "the daemon went on")
            #expect(daemon.process.waitUntilExit() != 0)
            #expect(Date().timeIntervalSince(started) >= 10)
            let log =
                (try? FileManager.default.contentsOfDirectory(atPath: directory.path))?
                .filter { $0.hasPrefix("daemon-") && $0.hasSuffix(".log") }
                .compactMap { try? String(contentsOfFile: directory.file($0), encoding: .utf8) }.joined() ?? ""
            #expect(log.contains("the courier did not start"), "\(log)")
            withExtendedLifetime(lock) {}
        }
        // Once the lock is free (closed with the scope above), it starts.
        try withDaemon {
            let listed = try run(["ls"])
            #expect(listed.status == 0)
        }
    }

    @Test func rekeyReplacesTheKeyAndAnInterruptedRekeyIsFinished() throws {
        try run(["init"])
        let sample = SamplePayloads.tinkoff()
        try withDaemon { try run(["put", "ns/a", "--provider", "tinkoff-id"], stdin: sample.json) }
        let oldKey = RawBytes.read(keyFile)
        #expect(try run(["rekey"]).status == 0)
        #expect(RawBytes.read(keyFile) != oldKey)
        #expect(try mode(keyFile) == 0o600)
        #expect(try run(["verify"]).status == 0)

        // A crash between the re-wrap commit and the rename: the vault is wrapped under a key
        // that still sits in master.key.new.
        let newKey = directory.file("next.key")
        writePrivate(newKey, String(repeating: "c3", count: 32))
        #expect(try run(["rekey", "--new-key-file", newKey]).status == 0)
        try FileManager.default.copyItem(atPath: newKey, toPath: keyFile + ".new")
        let recovered = try run(["verify"])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect(recovered.stderr.contains("finished an interrupted rekey"))
        #expect(RawBytes.read(keyFile) == RawBytes.read(newKey))
        #expect(!FileManager.default.fileExists(atPath: keyFile + ".new"))
        try withDaemon {
            let token = try run(["token", "ns/a"])
            #expect(token.stdout == sample.tokens[0] + "\n")
        }
    }

    @Test func missingVaultNamesTheFixingCommand() throws {
        let result = try run(["verify"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("no vault at \(dataDir)") && result.stderr.contains("tokenvault init"))
    }
}
