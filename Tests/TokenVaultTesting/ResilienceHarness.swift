import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The built daemon refreshing real credentials against the loopback `TestOAuthServer`: a
/// vault, a config naming the provider instance `idp`, helpers to seed credentials, read
/// tokens over the socket and check what the provider saw.
public final class ResilienceHarness: Sendable {
    public let directory = TemporaryDirectory("tokenvault-resilience")
    public let cli = CommandRunner()
    public let server: TestOAuthServer
    public let lifetime: Double
    /// How the daemons find a PostgreSQL vault (empty: each node's SQLite file), and the lease
    /// period when a test sets one.
    public let storageEnvironment: [String: String]
    /// The shared PostgreSQL vault, when there is one.
    public let postgres: (server: TestPostgres, database: String)?
    public var dataDir: String { dataDir(1) }
    public var socket: String { socket(1) }
    public var configPath: String { directory.file("config.json") }
    /// Holds the client secret as `idp-secret` (`clientSecretByCredential`): the daemon's
    /// `CREDENTIALS_DIRECTORY` then.
    public var credentialsDirectory: String { directory.file("credentials") }

    /// Node 1 is the one every single-daemon test uses; more nodes share a PostgreSQL vault.
    public func dataDir(_ node: Int) -> String { directory.file(node == 1 ? "data" : "data\(node)") }
    public func socket(_ node: Int) -> String {
        directory.file(node == 1 ? "tokenvault.sock" : "tokenvault\(node).sock")
    }

    /// `limits` and `refresh` are the provider instance's config sections; `answerDelay` makes
    /// the provider answer every refresh after a random wait in that range (seconds).
    /// `providers` are more instances (`"name": {...}` members) and `sections` more top-level
    /// members of the config (`"limits": {...}`, `"access": [...]`).
    /// `postgres`: the vault is that database, shared by `nodes` daemons (each with its own data
    /// directory, socket and copy of the master key). `lateAnswers`: that share of refreshes is
    /// done at once and answered so many seconds later. `timeoutSeconds`: the instance's read
    /// timeout (nil: the default). `leaseSeconds`: `limits.lease_seconds` (nil: the default).
    /// `dpop`: the provider requires DPoP proofs, checked by it; `idpOptions`: more members of the
    /// `idp` instance (`"dpop": true, …`). `storage`: environment that replaces or adds to how
    /// every daemon and command reaches the database (a URL through a proxy, its password file).
    public init(
        lifetime: Double, graceWindow: Double = 0, limits: String, refresh: String, includeIDToken: Bool = false,
        answerDelay: ClosedRange<Double>? = nil, lateAnswers: (share: Double, seconds: Double)? = nil,
        timeoutSeconds: Double? = 5, leaseSeconds: Int? = nil, providers: String? = nil, sections: String? = nil,
        postgres: (server: TestPostgres, database: String)? = nil, nodes: Int = 1,
        clientSecretByCredential: Bool = false, dpop: DPoPVerifier? = nil, idpOptions: String? = nil,
        storage: [String: String] = [:]
    ) async throws {
        self.lifetime = lifetime
        self.postgres = postgres
        var environment =
            postgres.map { ["TOKENVAULT_STORAGE_URL": $0.server.socketURL(database: $0.database)] } ?? [:]
        if let leaseSeconds { environment["TOKENVAULT_LEASE_SECONDS"] = "\(leaseSeconds)" }
        environment.merge(storage) { $1 }
        storageEnvironment = environment
        var options = TestOAuthServer.Options()
        options.accessTokenLifetime = lifetime
        options.graceWindow = graceWindow
        options.includeIDToken = includeIDToken
        options.tokenAnswerDelay = answerDelay
        options.lateAnswers = lateAnswers
        options.dpop = dpop
        server = try await TestOAuthServer.start(options)
        _ = try cli.run(["init", "--data-dir", dataDir], environment: storageEnvironment)
        if nodes > 1 {
            let key = try Data(contentsOf: URL(fileURLWithPath: dataDir + "/master.key"))
            for node in 2...nodes {
                try FileManager.default.createDirectory(
                    atPath: dataDir(node), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                writeFile(dataDir(node) + "/master.key", key, permissions: 0o600)
            }
        }
        let secretFile = directory.file("client.secret")
        writeFile(secretFile, Data("vault-secret".utf8), permissions: 0o600)
        // Or as systemd's LoadCredential= hands it over: a file in $CREDENTIALS_DIRECTORY.
        try FileManager.default.createDirectory(
            atPath: credentialsDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        writeFile(credentialsDirectory + "/idp-secret", Data("vault-secret".utf8), permissions: 0o400)
        let secret =
            clientSecretByCredential
            ? #""client_secret_credential": "idp-secret""# : #""client_secret_file": "\#(secretFile)""#
        let config = """
            {"providers": {"idp": {
                "kind": "oauth2", "token_endpoint": "\(server.tokenURL)", "revocation_endpoint": "\(server.revocationURL)",
                "client_id": "vault-client", \(secret),\(timeoutSeconds.map { " \"timeout_seconds\": \($0)," } ?? "")
                "refresh": \(refresh), "limits": \(limits)\(idpOptions.map { ", " + $0 } ?? "")}\(providers.map { ", " + $0 } ?? "")}\(sections.map { ", " + $0 } ?? "")}
            """
        writeFile(configPath, Data(config.utf8))
    }

    /// `launcher` runs the daemon (`faketime`, for a clock that is off); `environment` adds to or
    /// replaces the shared one (a node reaching the database another way).
    public func startDaemon(
        logLevel: String = "notice", node: Int = 1, launcher: [String] = [], environment: [String: String] = [:]
    ) throws -> DaemonProcess {
        try DaemonProcess(
            launcher: launcher, arguments: ["--data-dir", dataDir(node), "--config", configPath],
            socketPath: socket(node),
            logDirectory: directory.path,
            environment: storageEnvironment.merging(["TOKENVAULT_LOG_LEVEL": logLevel]) { $1 }
                .merging(environment) { $1 })
    }

    /// Refresh attempts `node` has journalled and not finished (PostgreSQL): each has its
    /// provider call out or about to go out.
    public func openAttempts(node: Int) throws -> Int {
        guard let postgres else { return 0 }
        let identity = try String(contentsOfFile: dataDir(node) + "/node.id", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let count = try postgres.server.psql(
            "SELECT count(*) FROM refresh_attempts WHERE state = 'open' AND lease_owner LIKE '\(identity)/%'",
            database: postgres.database)
        return Int(count.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    /// `tokenvault verify` on node 1's view of the vault.
    public func verify() throws -> CommandRunner.Result {
        try cli.run(["verify", "--data-dir", dataDir], environment: storageEnvironment)
    }

    public static func name(_ index: Int) -> String { "idp/c\(index)" }

    /// Tokens minted by the test provider (`at-…`, `rt-…`) found in a daemon log: must be none.
    public static func leakedTokens(in log: String) -> [String] {
        log.matches(of: /\b(?:at|rt)-[A-Za-z0-9_-]{16,}/).map { String($0.output) }
    }

    /// When each seeded token family was issued (its first token's lifetime starts then).
    private let issued = Mutex<[String: Date]>([:])
    /// The credential each seeded token family belongs to (for a failure's diagnosis).
    private let families = Mutex<[String: String]>([:])

    /// Stores `count` credentials, each a fresh token family at the provider.
    public func seed(_ count: Int) throws {
        let connection = try UnixSocketConnection(path: socket)
        for index in 0..<count {
            let issuedAt = Date()
            let tokens = server.issue(lifetime: lifetime)
            issued.withLock { $0[tokens.familyID] = issuedAt }
            families.withLock { $0[tokens.familyID] = Self.name(index) }
            // The vault dates `expires_in` from when the PUT arrives, milliseconds after the
            // provider minted the token; a read in those last milliseconds would get a token the
            // provider has already expired. A backend that knows when its token was minted says
            // so with `expires_at` (it wins over `expires_in`): here, no later than the mint.
            let expiresAt = ((issuedAt.timeIntervalSince1970 + lifetime) * 1000).rounded(.down) / 1000
            let body =
                "{\"provider\": \"idp\", \"token\": {\"expires_at\": \(expiresAt), \(tokens.responseJSON.dropFirst())}"
            try connection.send(
                "PUT /v1/credentials/\(Self.name(index)) HTTP/1.1\r\nHost: localhost\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            guard let response = try connection.readResponse(), response.status == 201 else {
                throw SocketTestError("seeding \(Self.name(index)) failed")
            }
        }
    }

    /// Every credential's metadata, through the API, page by page.
    public func list() throws -> [[String: Any]] {
        var items: [[String: Any]] = []
        var cursor: String?
        repeat {
            let target = "/v1/credentials?namespace=idp&limit=500" + (cursor.map { "&cursor=\($0)" } ?? "")
            let page = try UnixSocketHTTP.request(socket, "GET", target).json()
            items += page["items"] as? [[String: Any]] ?? []
            cursor = page["next_cursor"] as? String
        } while cursor != nil
        return items
    }

    /// Reads tokens in a loop until `deadline`, checking each served token with the provider.
    /// Returns what it saw; runs on a thread of its own.
    public func readTokens(
        until deadline: Date, count: Int, minimumTTL: Double, pause: Double = 0, node: Int = 1
    ) throws -> TokenReadReport {
        var report = TokenReadReport()
        try readTokens(until: deadline, count: count, minimumTTL: minimumTTL, pause: pause, node: node, into: &report)
        return report
    }

    /// `readTokens`, adding to `report` as it goes (what was seen before a lost connection counts).
    public func readTokens(
        until deadline: Date, count: Int, minimumTTL: Double, pause: Double, node: Int,
        into report: inout TokenReadReport
    ) throws {
        let connection = try UnixSocketConnection(path: socket(node))
        while Date() < deadline {
            let index = Int.random(in: 0..<count)
            // The daemon decided between sending and receiving: a token valid when the request
            // left may expire by the time the answer is read, and was rightly served.
            let sent = Date()
            try connection.send(
                "GET /v1/credentials/\(Self.name(index))/token?min_ttl=\(Int(minimumTTL)) HTTP/1.1\r\nHost: localhost\r\n\r\n"
            )
            guard let response = try connection.readResponse() else { throw SocketTestError("daemon hung up") }
            let received = Date()
            switch response.status {
            case 200:
                report.served += 1
                let body = response.json()
                let token = body["access_token"] as? String ?? ""
                switch server.accessTokenState(token, at: sent) {
                case .valid(let expiresAt):
                    if expiresAt.timeIntervalSince(received) < minimumTTL - 0.5 { report.tooShort += 1 }
                case let state:
                    report.invalid.append("\(Self.name(index)): \(state)")
                }
                if body.keys.contains("refresh_token") { report.refreshTokenLeaks += 1 }
            case 409:
                report.refused[response.json()["code"] as? String ?? "?", default: 0] += 1
                if report.refusalDetails.count < 5 {
                    report.refusalDetails.append(response.json()["detail"] as? String ?? "")
                }
            default:
                report.unexpected.append("\(response.status): \(response.text)")
            }
            if pause > 0 { Thread.sleep(forTimeInterval: pause) }
        }
    }

    /// `readTokens` on a node that may be killed and restarted meanwhile: a lost or refused
    /// connection is counted and the reader connects again (until `deadline`).
    public func readTokensThroughRestarts(
        until deadline: Date, count: Int, minimumTTL: Double, pause: Double, node: Int
    ) -> (report: TokenReadReport, interruptions: Int) {
        var total = TokenReadReport()
        var interruptions = 0
        while Date() < deadline {
            do {
                try readTokens(
                    until: deadline, count: count, minimumTTL: minimumTTL, pause: pause, node: node, into: &total)
            } catch {
                interruptions += 1
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        return (total, interruptions)
    }

    /// Once the database takes writes again (space returned): the answers `daemon` held are
    /// committed without a restart (held commits are retried every few seconds), refreshes go
    /// on, and nothing was lost or presented twice; stops the daemon.
    public func checkHeldAnswersCommitted(by daemon: DaemonProcess, count: Int) async throws {
        let committed = try await waitUntil(within: 60) {
            let health = try? UnixSocketHTTP.request(socket, "GET", "/v1/health").json()
            return (health?["database"] as? [String: Any])?["held_commits"] as? Int == 0
        }
        #expect(committed, "held answers were not committed after space returned")
        let refreshedAfter = server.successfulRefreshes
        #expect(try await waitUntil(within: 30) { server.successfulRefreshes > refreshedAfter + count / 2 })
        let listed = try list()
        #expect(daemon.terminate() == 0)
        try checkNothingLost(listed: listed, count: count)
        #expect(Self.leakedTokens(in: daemon.log).isEmpty, "tokens in the daemon log")
    }

    /// What a run that must lose nothing ends with: all `count` credentials there and active,
    /// no family revoked at the provider, no refresh token presented twice, `verify` clean.
    public func checkNothingLost(listed: [[String: Any]], count: Int) throws {
        #expect(listed.count == count, "credentials lost: \(count - listed.count)")
        let notActive = listed.filter { $0["status"] as? String != "active" }
        #expect(notActive.isEmpty, "not active: \(notActive.prefix(3))")
        #expect(server.revokedFamilies == 0, "\(server.revokedFamilies) token families revoked")
        #expect(
            server.refreshTokensPresentedTwice.isEmpty,
            "\(server.refreshTokensPresentedTwice.count) refresh tokens presented twice")
        let verify = try verify()
        #expect(verify.status == 0, "verify: \(verify.stdout) \(verify.stderr)")
    }

    /// Per token family, the longest time between its issue or one refresh at the provider and
    /// the next (or the end of the run): more than the lifetime means the credential expired.
    public func longestGaps(to end: Date) -> [String: Double] {
        var last = issued.withLock { $0 }
        let start = last.values.min() ?? end
        var longest: [String: Double] = [:]
        for request in server.requests where request.path.hasSuffix("/token") {
            guard let presented = request.form["refresh_token"], let family = server.familyID(of: presented) else {
                continue
            }
            let previous = last[family] ?? start
            longest[family] = max(longest[family] ?? 0, request.receivedAt.timeIntervalSince(previous))
            last[family] = request.receivedAt
        }
        for (family, at) in last { longest[family] = max(longest[family] ?? 0, end.timeIntervalSince(at)) }
        return longest
    }

    /// What a failure report needs about a token family: its credential, when the provider saw
    /// it issued and each refresh (seconds from the first issue), and the daemon log lines that
    /// name the credential.
    public func history(of family: String, logs: String) -> String {
        let issued = issued.withLock { $0 }
        let start = issued.values.min() ?? Date()
        let name = families.withLock { $0[family] } ?? "?"
        let presented = server.requests.filter { request in
            request.path.hasSuffix("/token") && request.form["refresh_token"].flatMap(server.familyID(of:)) == family
        }
        let times = ([issued[family]].compactMap { $0 } + presented.map(\.receivedAt)).map {
            String(format: "%.1f", $0.timeIntervalSince(start))
        }
        let lines = logs.split(separator: "\n").filter { line in
            line.ranges(of: name).contains { range in
                range.upperBound == line.endIndex || !line[range.upperBound].isNumber
            }
        }
        return "\(name): issued and refreshed at \(times) s; its log lines:\n"
            + lines.suffix(20).joined(separator: "\n")
    }
}

public struct TokenReadReport: Sendable {
    public var served = 0
    public var tooShort = 0
    public var invalid: [String] = []
    public var refused: [String: Int] = [:]
    public var refusalDetails: [String] = []
    public var unexpected: [String] = []
    public var refreshTokenLeaks = 0

    public init() {}

    public mutating func add(_ other: TokenReadReport) {
        served += other.served
        tooShort += other.tooShort
        invalid += other.invalid
        refused.merge(other.refused) { $0 + $1 }
        refusalDetails += other.refusalDetails
        unexpected += other.unexpected
        refreshTokenLeaks += other.refreshTokenLeaks
    }
}
