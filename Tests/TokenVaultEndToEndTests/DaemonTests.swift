import Foundation
import Testing
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// `tokenvault serve` as operators run it: the socket, the lock, signals, the log.
@Suite struct DaemonTests {
    let directory = TemporaryDirectory("tokenvault-daemon")
    let cli = CommandRunner()
    var dataDir: String { directory.file("data") }
    var socket: String { dataDir + "/run/tokenvault.sock" }

    init() throws {
        _ = try cli.run(["init", "--data-dir", dataDir])
    }

    func client(_ arguments: [String], stdin: String? = nil) throws -> CommandRunner.Result {
        try cli.run(arguments + ["--socket", socket], stdin: stdin)
    }

    func startDaemon(socket: String? = nil, dataDir: String? = nil, extra: [String] = []) throws -> DaemonProcess {
        try DaemonProcess(
            arguments: ["--data-dir", dataDir ?? self.dataDir] + extra, socketPath: socket ?? self.socket,
            logDirectory: directory.path)
    }

    @Test func storeReadListDeleteAndStopOnSIGTERM() throws {
        let daemon = try startDaemon()
        let attributes = try FileManager.default.attributesOfItem(atPath: socket)
        #expect(attributes[.posixPermissions] as? Int == 0o660)
        #expect(attributes[.type] as? FileAttributeType == .typeSocket)
        let parent = try FileManager.default.attributesOfItem(atPath: dataDir + "/run")
        #expect(parent[.posixPermissions] as? Int == 0o750)

        let sample = SamplePayloads.tinkoff()
        let put = try client(
            ["put", "payments/alice", "--provider", "tinkoff-id", "--label", "env=test", "--json"], stdin: sample.json)
        #expect(put.status == 0, "\(put.stderr)")
        #expect(put.stdout.contains("\"generation\" : 1"))
        #expect(try client(["token", "payments/alice"]).stdout == sample.tokens[0] + "\n")
        let tokenJSON = try client(["token", "payments/alice", "--json", "--min-ttl", "60"])
        #expect(tokenJSON.stdout.contains("\"token_type\" : \"Bearer\""))
        #expect(try client(["token", "payments/alice", "--min-ttl", "3600"]).status == 1)
        let list = try client(["ls"])
        #expect(list.stdout.contains("payments/alice") && list.stdout.contains("tinkoff-id"))
        let show = try client(["show", "payments/alice"])
        for output in [put.stdout, show.stdout, list.stdout, tokenJSON.stdout] {
            #expect(!output.contains(sample.tokens[1]), "the refresh token never leaves the vault")
        }
        let audit = try client(["audit", "--credential", "payments/alice"])
        #expect(audit.stdout.contains("credential.put") && audit.stdout.contains("token.read"))
        // Newest first, or oldest first when asked: the put is the first row written about it.
        func operations(_ extra: [String]) throws -> [String] {
            let listed = try client(["audit", "--credential", "payments/alice", "--json"] + extra).stdout
            let rows = try JSONSerialization.jsonObject(with: Data(listed.utf8)) as? [[String: Any]] ?? []
            return rows.compactMap { $0["operation"] as? String }
        }
        #expect(try operations(["--oldest-first"]).first == "credential.put")
        #expect(try operations([]).last == "credential.put")
        #expect(try operations([]) == operations(["--oldest-first"]).reversed())
        #expect(try client(["rm", "payments/alice"]).status == 0)
        let missing = try client(["show", "payments/alice"])
        #expect(missing.status == 3)
        #expect(missing.stderr.contains("credential payments/alice does not exist"))

        #expect(daemon.terminate() == 0)
        #expect(!FileManager.default.fileExists(atPath: socket), "SIGTERM removes the socket")
        #expect(daemon.log.contains("stopped"))
        let unreachable = try client(["ls"])
        #expect(unreachable.status == 5)
        #expect(unreachable.stderr.contains("tokenvault serve"))
    }

    @Test func badInputThroughTheCLIChangesNothing() throws {
        let daemon = try startDaemon()
        defer { daemon.terminate() }
        let malformed = try client(["put", "ns/a", "--provider", "tinkoff-id"], stdin: "{\"access_token\": ")
        #expect(malformed.status == 1)
        #expect(malformed.stderr.contains("must be a JSON object"), "the client refuses it before sending")
        let wrongType = try client(["put", "ns/a", "--provider", "tinkoff-id"], stdin: "{\"access_token\": 5}")
        #expect(wrongType.stderr.contains("token.access_token"), "the daemon names the field")
        let negative = try client(
            ["put", "ns/a", "--provider", "tinkoff-id"], stdin: "{\"access_token\":\"x\",\"expires_in\":-5}")
        #expect(negative.stderr.contains("token.expires_in"))
        #expect(
            try client(["put", "ns/a", "--provider", "no-such-bank"], stdin: "{\"access_token\":\"x\"}").status == 1)
        #expect(try client(["ls", "--json"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[\n\n]")
    }

    @Test func secondDaemonOnTheSameDatabaseOrSocketIsRefused() throws {
        let first = try startDaemon()
        defer { first.terminate() }
        let sameDatabase = try cli.run(["serve", "--data-dir", dataDir, "--socket", directory.file("other.sock")])
        #expect(sameDatabase.status == 1)
        #expect(
            sameDatabase.stderr.contains(
                "a tokenvault daemon (pid \(first.process.processIdentifier)) serving \(socket) already holds"))
        let otherData = directory.file("data2")
        _ = try cli.run(["init", "--data-dir", otherData])
        let sameSocket = try cli.run(["serve", "--data-dir", otherData, "--socket", socket])
        #expect(sameSocket.status == 1)
        #expect(sameSocket.stderr.contains("already listening on \(socket)"))
        #expect(try client(["ls"]).status == 0, "the first daemon is unaffected")
    }

    /// A socket named without a directory is made in the current one (its directory is "", which
    /// Foundation's file calls report as "The file doesn't exist").
    @Test func aSocketNamedWithoutADirectoryIsMadeInTheCurrentOne() throws {
        let workingDirectory = directory.file("cwd")
        try FileManager.default.createDirectory(atPath: workingDirectory, withIntermediateDirectories: true)
        let daemon = try DaemonProcess(
            launcher: ["/bin/sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh", workingDirectory],
            arguments: ["--data-dir", dataDir], socketPath: "relative.sock", logDirectory: directory.path)
        defer { daemon.terminate() }
        let absolute = workingDirectory + "/relative.sock"
        let listed = try cli.run(["ls", "--socket", absolute])
        #expect(listed.status == 0, "\(listed.stderr) \(daemon.log)")
    }

    @Test func staleSocketFromAKilledDaemonIsRecovered() throws {
        let killed = try startDaemon()
        killed.kill()
        #expect(FileManager.default.fileExists(atPath: socket), "SIGKILL leaves the socket file behind")
        let restarted = try startDaemon()
        defer { restarted.terminate() }
        #expect(try client(["ls"]).status == 0)
    }

    @Test func noTokenValueAppearsInTheDaemonLog() throws {
        let daemon = try DaemonProcess(
            arguments: ["--data-dir", dataDir], socketPath: socket, logDirectory: directory.path,
            environment: ["TOKENVAULT_LOG_LEVEL": "trace"])
        var secrets: [String] = []
        for index in 0..<5 {
            let sample = [SamplePayloads.tinkoff(), SamplePayloads.oauth(), SamplePayloads.ebs()][index % 3]
            secrets += sample.tokens
            _ = try client(["put", "logs/c\(index)", "--provider", "oauth2"], stdin: sample.json)
            _ = try client(["token", "logs/c\(index)", "--json"])
        }
        _ = try client(
            ["put", "logs/bad", "--provider", "oauth2"], stdin: "{\"access_token\":\"leak-me\",\"expires_in\":\"x\"}")
        secrets.append("leak-me")
        // A caller's trace context: its trace id is in the request's log lines; a malformed one is not.
        let traced = try UnixSocketHTTP.request(
            socket, "PUT", "/v1/credentials/logs/traced",
            body: #"{"provider": "oauth2", "token": {"access_token": "traced-token", "expires_in": 600}}"#,
            headers: ["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"])
        #expect(traced.status == 201, "\(traced.text)")
        _ = try UnixSocketHTTP.request(
            socket, "PUT", "/v1/credentials/logs/untraced",
            body: #"{"provider": "oauth2", "token": {"access_token": "untraced-token", "expires_in": 600}}"#,
            headers: ["traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"])
        secrets += ["traced-token", "untraced-token"]
        daemon.terminate()
        let log = daemon.log
        #expect(log.contains("credential stored"), "the log must have been captured")
        let tracedLine = log.split(separator: "\n").first {
            $0.contains("logs/traced") && $0.contains("credential stored")
        }
        #expect(
            tracedLine?.contains("tokenvault.trace.id=4bf92f3577b34da6a3ce929d0e0e4736") == true, "\(tracedLine ?? "")")
        let untracedLine = log.split(separator: "\n").first {
            $0.contains("logs/untraced") && $0.contains("credential stored")
        }
        #expect(untracedLine.map { !$0.contains("tokenvault.trace.id") } == true, "\(untracedLine ?? "")")
        for secret in secrets { #expect(!log.contains(secret), "a token value reached the daemon log") }
    }

    /// Another uid, via `setpriv`, with a rule for one namespace only (uid 4242 needs no
    /// account: the kernel reports it through SO_PEERCRED and the rule names it by number).
    @Test(.enabled(if: getuid() == 0, "switching uid needs root"))
    func anotherUserGetsOnlyWhatItsRuleAllows() throws {
        chmod(directory.path, 0o755)
        let sharedSocket = directory.file("shared/tokenvault.sock")
        let config = directory.file("config.json")
        writeFile(
            config,
            Data(
                """
                {"socket": {"path": "\(sharedSocket)", "mode": "0660", "group": "4242"},
                 "access": [{"user": 4242, "namespaces": ["allowed"], "permissions": ["token:read", "credential:write"]}]}
                """.utf8))
        let daemon = try DaemonProcess(
            arguments: ["--data-dir", dataDir, "--config", config], socketPath: sharedSocket,
            logDirectory: directory.path)
        defer { daemon.terminate() }

        func curlAs4242(_ method: String, _ path: String, body: String? = nil) throws -> (status: Int, body: String) {
            var arguments = [
                "--reuid=4242", "--regid=4242", "--clear-groups", "curl", "-s", "-w", "\n%{http_code}",
                "--unix-socket", sharedSocket, "-X", method, "http://localhost\(path)",
            ]
            if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body] }
            let result = try CommandRunner(executable: "/usr/bin/setpriv").run(arguments)
            let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            return (Int(lines.last ?? "") ?? -1, lines.dropLast().joined(separator: "\n"))
        }
        let body = "{\"provider\": \"tinkoff-id\", \"token\": \(SamplePayloads.tinkoff().json)}"
        #expect(try curlAs4242("PUT", "/v1/credentials/allowed/app", body: body).status == 201)
        #expect(try curlAs4242("GET", "/v1/credentials/allowed/app/token").status == 200)
        let denied = try curlAs4242("PUT", "/v1/credentials/other/app", body: body)
        #expect(denied.status == 403)
        #expect(denied.body.contains("\"code\":\"forbidden\""))
        #expect(try curlAs4242("GET", "/v1/credentials/other/app/token").status == 403)

        let audit = try cli.run(["audit", "--json", "--socket", sharedSocket])
        #expect(audit.stdout.contains("\"uid\" : 4242"))
        #expect(audit.stdout.contains("\"credential_id\" : \"allowed/app\""))
        #expect(audit.stdout.contains("\"outcome\" : \"denied\""))
        #expect(audit.stdout.contains("\"credential_id\" : \"other/app\""))
    }
}
