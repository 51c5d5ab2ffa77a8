import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `scripts/authorization-server.py`, a real authorization server built on Authlib (installed by
/// `make test` into `.build/test-venv`), started for one test, and a browser that signs its one
/// person in: it follows an authorization URL to the consent page and answers it.
public final class AuthorizationServerProcess: @unchecked Sendable {
    public let process: SpawnedProcess
    public let issuer: String
    public let logPath: String
    /// Where its output goes, kept as long as the server (a test's files for it can live here).
    public let directory: TemporaryDirectory

    /// `redirectURIs`: the client's registered ones; `par`: the server requires pushed requests;
    /// `slowDown`: the first polls of each device code answered `slow_down`; `deviceTokenDelay`:
    /// seconds the answer that redeems a device code is held; `arguments`: more of the script's
    /// options (`--id-token-alg ES256`, `--client-auth private_key_jwt`).
    public init(
        directory: TemporaryDirectory, redirectURIs: [String], par: Bool = false, lifetime: Int = 3600,
        slowDown: Int = 0, deviceTokenDelay: Double = 0, deviceInterval: Int = 1, arguments extra: [String] = [],
        timeout: Double = 30
    ) throws {
        self.directory = directory
        let root = Self.packageRoot
        let python = root + "/.build/test-venv/bin/python"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw SocketTestError("no \(python): run make test (or scripts/install-deps.sh --test)")
        }
        let output = directory.file("authorization-server-\(UUID().uuidString.prefix(6)).out")
        logPath = output + ".log"
        writeFile(output)
        var arguments = [root + "/scripts/authorization-server.py", "--port", "0", "--lifetime", "\(lifetime)"]
        for uri in redirectURIs { arguments += ["--redirect-uri", uri] }
        if par { arguments.append("--par") }
        arguments +=
            [
                "--slow-down", "\(slowDown)", "--device-token-delay", "\(deviceTokenDelay)", "--device-interval",
                "\(deviceInterval)",
            ] + extra
        process = try SpawnedProcess(
            executable: python, arguments: arguments, environment: ProcessInfo.processInfo.environment,
            stdout: output, stderr: logPath)
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first,
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let issuer = object["issuer"] as? String
            {
                self.issuer = issuer
                break
            }
            guard process.isRunning, Date() < deadline else {
                process.signal(SIGKILL)
                throw SocketTestError(
                    "the authorization server did not start: \((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")"
                )
            }
            usleep(50_000)
        }
    }

    deinit { stop() }

    /// SIGKILL: it holds nothing worth a graceful end, and a child spawned from a test thread
    /// inherits that thread's blocked signals, SIGTERM among them.
    public func stop() {
        process.signal(SIGKILL)
        process.waitUntilExit()
    }

    /// The package's checkout, found from this file (`make test` puts the test packages' Python
    /// environment in its `.build`).
    public static var packageRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
    }

    /// Revokes every refresh token it issued: the next refresh is `invalid_grant`.
    public func revokeEverything() async throws {
        _ = try await TestHTTPClient.request("POST", issuer + "/test/revoke", timeout: 60)
    }

    /// One of the script's `/test/` hooks, with a JSON body when given; its answer as a JSON object.
    @discardableResult
    public func hook(_ method: String, _ path: String, json body: String? = nil) async throws -> [String: Any] {
        let answer = try await TestHTTPClient.request(
            method, issuer + path, headers: body == nil ? [:] : ["Content-Type": "application/json"],
            body: Array((body ?? "").utf8), timeout: 60)
        guard answer.status == 200 else { throw SocketTestError("\(path) answered \(answer.status): \(answer.text)") }
        return try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any] ?? [:]
    }

    /// What the person does at the verification page with the user code: allow or deny.
    public func decideDevice(_ userCode: String, allow: Bool = true) async throws {
        let answer = try await TestHTTPClient.postForm(
            issuer + "/device", ["user_code": userCode, "decision": allow ? "allow" : "deny"], timeout: 60)
        guard answer.status == 200 else { throw SocketTestError("the device page answered \(answer.status)") }
    }

    /// When each of the device grant's token requests came, by user code (Unix seconds).
    public func devicePollTimes() async throws -> [String: [Double]] {
        let answer = try await TestHTTPClient.request("GET", issuer + "/test/polls", timeout: 60)
        let object = try JSONSerialization.jsonObject(with: Data(answer.text.utf8)) as? [String: Any] ?? [:]
        return object["poll_times"] as? [String: [Double]] ?? [:]
    }

    /// The device grant's token requests so far, by user code, every device code issued, and the
    /// user codes whose device code was redeemed (as soon as the answer is made, before any delay).
    public func devicePolls() async throws -> (polls: [String: Int], deviceCodes: [String], redeemed: [String]) {
        let answer = try await TestHTTPClient.request("GET", issuer + "/test/polls", timeout: 60)
        let object = try JSONSerialization.jsonObject(with: Data(answer.text.utf8)) as? [String: Any] ?? [:]
        return (
            object["polls"] as? [String: Int] ?? [:], object["device_codes"] as? [String] ?? [],
            object["redeemed"] as? [String] ?? []
        )
    }

    /// What the person's browser does with an authorization URL: loads it, answers the consent
    /// page (`allow` or not), and returns where the server redirected it (the callback URL), or
    /// the page it stopped at.
    public func signIn(_ authorizationURL: String, allow: Bool = true) async throws -> String {
        // A minute per request: the server is Python, sharing two cores with every suite.
        let page = try await TestHTTPClient.request("GET", authorizationURL, timeout: 60)
        guard page.status == 200,
            let consent = page.text.firstMatch(of: /name="consent" value="([^"]+)"/)?.output.1
        else { throw SocketTestError("the authorization page answered \(page.status): \(page.text)") }
        let decision = try await TestHTTPClient.postForm(
            issuer + "/consent", ["consent": String(consent), "decision": allow ? "allow" : "deny"], timeout: 60)
        guard decision.status == 302, let location = decision.headers["location"] else {
            throw SocketTestError("the consent answered \(decision.status): \(decision.text)")
        }
        return location
    }
}
