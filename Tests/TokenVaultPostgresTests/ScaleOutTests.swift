import Foundation
import Testing
import TokenVaultTesting

/// Several daemons on one PostgreSQL vault (docs/scale-out.md), as operators run them: each
/// with its own data directory, socket and copy of the master key, the same storage URL, the
/// password from a file. A PostgreSQL server is started by the tests (`TestPostgres`).
@Suite struct ScaleOutTests {
    let directory = TemporaryDirectory("tokenvault-scale-out")
    let cli = CommandRunner()
    let server: TestPostgres
    let url: String
    let passwordFile: String

    init() async throws {
        (server, url, passwordFile) = try await TestPostgres.makeDatabaseWithPasswordFile(in: directory)
    }

    var storage: [String: String] {
        ["TOKENVAULT_STORAGE_URL": url, "TOKENVAULT_STORAGE_PASSWORD_FILE": passwordFile]
    }

    func dataDir(_ node: Int) -> String { directory.file("node\(node)") }
    func socket(_ node: Int) -> String { dataDir(node) + "/run/tokenvault.sock" }

    /// `init` on the first node; the others get a copy of its master key.
    func initialise(nodes: Int) throws {
        let initialised = try cli.run(["init", "--data-dir", dataDir(1)], environment: storage)
        #expect(initialised.status == 0, "\(initialised.stderr)")
        #expect(initialised.stdout.contains("initialised vault postgres://postgres@127.0.0.1"))
        let key = try Data(contentsOf: URL(fileURLWithPath: dataDir(1) + "/master.key"))
        for node in 2...max(2, nodes) {
            try FileManager.default.createDirectory(
                atPath: dataDir(node), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            writeFile(dataDir(node) + "/master.key", key, permissions: 0o600)
        }
        // A second init against the same database refuses and says how nodes share it.
        let again = try cli.run(["init", "--data-dir", dataDir(2)], environment: storage)
        #expect(again.status != 0 && again.stderr.contains("copy the key file"), "\(again.stderr)")
    }

    func start(_ node: Int) throws -> DaemonProcess {
        try DaemonProcess(
            arguments: ["--data-dir", dataDir(node)], socketPath: socket(node), logDirectory: directory.path,
            environment: storage)
    }

    func client(_ node: Int, _ arguments: [String], stdin: String? = nil) throws -> CommandRunner.Result {
        try cli.run(arguments + ["--socket", socket(node)], stdin: stdin)
    }

    /// The socket inodes a process holds (`socket:[N]` links under /proc/PID/fd).
    static func sockets(of pid: Int32) -> Set<String> {
        let directory = "/proc/\(pid)/fd"
        let links = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return Set(
            links.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + $0) }
                .filter { $0.hasPrefix("socket:") })
    }

    /// Polls `condition` every millisecond; how long it took, or nil past `limit` seconds.
    func timeUntil(limit: Double, _ condition: () throws -> Bool) rethrows -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < limit {
            if try condition() { return Date().timeIntervalSince(start) }
            usleep(1000)
        }
        return nil
    }

    /// Two nodes deliver the same outbox to one endpoint: every event arrives, each once (a row
    /// is claimed by one node), whichever node made the change.
    @Test func eachWebhookEventIsDeliveredByOneNode() async throws {
        try initialise(nodes: 2)
        let receiver = try await TestWebhookReceiver(mode: .hold(0.5))
        let secret = directory.file("hook.whsec")
        #expect(try cli.run(["webhooks", "secret", secret]).status == 0)
        let config = directory.file("webhooks.json")
        let section = #"{"webhooks": {"endpoints": {"t": {"url": "\#(receiver.url)", "secret_file": "\#(secret)"}}}}"#
        writeFile(config, Data(section.utf8))
        let nodes = try [1, 2].map { node in
            try DaemonProcess(
                arguments: ["--data-dir", dataDir(node), "--config", config], socketPath: socket(node),
                logDirectory: directory.path, environment: storage.merging(["TOKENVAULT_LOG_LEVEL": "debug"]) { $1 })
        }
        defer { for node in nodes { node.terminate() } }
        let count = 30
        for index in 0..<count {
            let node = index % 2 + 1
            let body = #"{"provider": "oauth2", "token": {"access_token": "at-\#(index)", "expires_in": 3600}}"#
            #expect(
                try UnixSocketHTTP.request(socket(node), "PUT", "/v1/credentials/hooks/c\(index)", body: body).status
                    == 201)
            #expect(
                try UnixSocketHTTP.request(socket(3 - node), "DELETE", "/v1/credentials/hooks/c\(index)").status == 204)
        }
        let all = try await waitUntil(within: 60) { receiver.deliveries.count >= count }
        #expect(all, "\(receiver.deliveries.count) of \(count) events delivered")
        try await Task.sleep(for: .seconds(2))
        let ids = receiver.deliveries.map(\.id)
        #expect(ids.count == count && Set(ids).count == count, "\(ids.count) deliveries of \(Set(ids).count) events")
        #expect(Set(receiver.deliveries.compactMap(\.credential)) == Set((0..<count).map { "hooks/c\($0)" }))
        // Both nodes delivered: the outbox is shared work, not one node's.
        let delivered = nodes.map { $0.log.components(separatedBy: "webhook delivered").count - 1 }
        #expect(delivered.allSatisfy { $0 > 0 } && delivered.reduce(0, +) == count, "deliveries per node: \(delivered)")
    }

    @Test func aPutOnOneNodeIsServedByTheOtherAndADeleteStopsIt() async throws {
        try initialise(nodes: 3)
        let nodes = try (1...3).map { try start($0) }
        defer { for node in nodes { node.terminate() } }

        // Watch node 3 for changes made on node 1.
        let watchOutput = directory.file("watch.out")
        let first = SamplePayloads.tinkoff()
        let put = try client(1, ["put", "pay/alice", "--provider", "tinkoff-id"], stdin: first.json)
        #expect(put.status == 0, "\(put.stderr)")
        // Served by node 3 as soon as node 1's PUT returned.
        let served = try client(3, ["token", "pay/alice"])
        #expect(served.status == 0 && served.stdout == first.tokens[0] + "\n", "\(served.stderr)")
        let watch = try SpawnedProcess(
            executable: cli.executable, arguments: ["watch", "pay/alice", "--socket", socket(3)],
            environment: cli.environment, stdout: watchOutput)
        defer { watch.terminate() }
        // Its first line (the state now) before the change below, however long the CLI takes to start.
        let watching = try await waitUntil(within: 10) {
            ((try? String(contentsOfFile: watchOutput, encoding: .utf8)) ?? "").contains("generation 1")
        }
        #expect(watching, "watch on node 3 printed no first line")

        // Replaced on node 1: node 2 (which read and cached the old row) serves the new token.
        #expect(try client(2, ["token", "pay/alice"]).stdout == first.tokens[0] + "\n")
        let second = SamplePayloads.tinkoff()
        #expect(try client(1, ["put", "pay/alice", "--provider", "tinkoff-id"], stdin: second.json).status == 0)
        let replaced = try timeUntil(limit: 2) {
            try client(2, ["token", "pay/alice"]).stdout == second.tokens[0] + "\n"
        }
        #expect(replaced != nil, "node 2 kept serving the replaced token")

        // A key rotation started on node 2: rows it seals under the new term are served by the
        // others, which had opened the vault before the term existed.
        let rotated = try UnixSocketHTTP.request(socket(2), "POST", "/v1/admin/rotate-key", body: "{}")
        #expect(rotated.status == 200 || rotated.status == 202, "\(rotated.text)")
        let bob = SamplePayloads.tinkoff()
        #expect(try client(2, ["put", "pay/bob", "--provider", "tinkoff-id"], stdin: bob.json).status == 0)
        for node in [1, 3] {
            let read = try client(node, ["token", "pay/bob"])
            #expect(read.stdout == bob.tokens[0] + "\n", "node \(node): \(read.stderr)")
        }

        // Deleted on node 2: node 1 stops serving it.
        #expect(try client(2, ["rm", "pay/alice"]).status == 0)
        let stopped = try timeUntil(limit: 2) { try client(1, ["token", "pay/alice"]).status != 0 }
        #expect(stopped != nil, "node 1 kept serving a deleted credential")

        // Node 3's watch saw node 1's replacement, and ended with node 2's deletion.
        let watchEnded = try await waitUntil(within: 5) { !watch.isRunning }
        let watched = (try? String(contentsOfFile: watchOutput, encoding: .utf8)) ?? ""
        #expect(watchEnded, "watch on node 3 did not end when node 2 deleted the credential: \(watched)")
        #expect(watched.contains("generation 1") && watched.contains("generation 2"), "\(watched)")

        // Health names the backend and the change feed's state.
        let health = try UnixSocketHTTP.request(socket(3), "GET", "/v1/health").json()
        let database = health["database"] as? [String: Any]
        #expect(database?["backend"] as? String == "postgres", "\(health)")
        #expect((database?["change_feed"] as? [String: Any])?["connected"] as? Bool == true, "\(health)")
        #expect(health["status"] as? String == "ok", "\(health)")
        // The courier holds none of the daemon's descriptors (its database connections above
        // all: a killed daemon's transaction would live on while its courier finishes).
        let courierPID = try #require((health["courier"] as? [String: Any])?["pid"] as? Int)
        let shared = Self.sockets(of: Int32(courierPID)).intersection(
            Self.sockets(of: nodes[2].process.processIdentifier))
        #expect(shared.isEmpty, "the courier shares sockets with its daemon: \(shared)")

        let verify = try cli.run(["verify", "--data-dir", dataDir(3)], environment: storage)
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        for node in nodes { #expect(!node.log.contains("error"), "\(node.log)") }
    }

    /// No password file, a wrong password, a password in the URL: each refused at start with
    /// PostgreSQL's reason or ours, never with the password in the message.
    @Test func aNodeThatCannotReachTheVaultSaysWhy() throws {
        try initialise(nodes: 2)
        var wrong = storage
        let wrongFile = directory.file("wrong-password")
        writeFile(wrongFile, Data("not-the-password\n".utf8), permissions: 0o600)
        wrong["TOKENVAULT_STORAGE_PASSWORD_FILE"] = wrongFile
        let refused = try cli.run(["verify", "--data-dir", dataDir(2)], environment: wrong)
        #expect(refused.status != 0 && refused.stderr.contains("password authentication failed"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("not-the-password"))
        var inURL = storage
        inURL["TOKENVAULT_STORAGE_URL"] = url.replacingOccurrences(of: "postgres@", with: "postgres:hunter2@")
        let leaked = try cli.run(["verify", "--data-dir", dataDir(2)], environment: inURL)
        #expect(leaked.status != 0 && leaked.stderr.contains("password_file") && !leaked.stderr.contains("hunter2"))
    }

    /// The daemon's configuration file can name the database instead of the environment
    /// (`storage.*`), and every command that opens the vault reads it from `--config`.
    @Test func theConfigurationFileNamesTheDatabase() throws {
        let config = directory.file("config.json")
        let storageSection: [String: Any] = [
            "storage": ["backend": "postgres", "url": url, "password_file": passwordFile]
        ]
        try JSONSerialization.data(withJSONObject: storageSection).write(to: URL(fileURLWithPath: config))
        let initialised = try cli.run(["init", "--data-dir", dataDir(1), "--config", config])
        #expect(initialised.status == 0 && initialised.stdout.contains("postgres://"), "\(initialised.stderr)")
        let node = try DaemonProcess(
            arguments: ["--data-dir", dataDir(1), "--config", config], socketPath: socket(1),
            logDirectory: directory.path)
        defer { node.terminate() }
        let health = try UnixSocketHTTP.request(socket(1), "GET", "/v1/health").json()
        #expect((health["database"] as? [String: Any])?["backend"] as? String == "postgres", "\(health)")
        let verify = try cli.run(["verify", "--data-dir", dataDir(1)], environment: ["TOKENVAULT_CONFIG": config])
        #expect(verify.status == 0 && verify.stdout.contains("credentials: 0"), "\(verify.stdout) \(verify.stderr)")
        // Without the file, the same data directory is a SQLite vault that does not exist.
        #expect(try cli.run(["verify", "--data-dir", dataDir(1)]).stderr.contains("vault_not_found"))
    }
}
