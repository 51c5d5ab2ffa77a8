import Foundation
import Testing
import TokenVaultTesting

/// Device sign-ins (RFC 8628) through the built daemon against Authlib's device grant
/// (`scripts/authorization-server.py`): the daemon asks for the codes, polls the token endpoint
/// at the server's interval (5 s more after each `slow_down`), stores the tokens once the person
/// approves, and records a refusal; a daemon killed while a grant waits, or while the poll that
/// redeems it is answered, resumes and loses nothing.
@Suite struct DeviceSignInEndToEndTests {
    let signIns = SignInEndToEndTests()

    func startDevice(_ harness: ResilienceHarness, _ name: String) throws -> [String: Any] {
        let started = try UnixSocketHTTP.request(
            harness.socket, "POST", "/v1/credentials/people/\(name)/authorization",
            body: #"{"provider": "authlib", "mode": "device", "scopes": ["profile"], "labels": {"via": "device"}}"#)
        #expect(started.status == 201, "\(started.text)")
        #expect(started.headers["cache-control"] == "no-store")
        return started.json()
    }

    func status(_ harness: ResilienceHarness, _ name: String) throws -> [String: Any] {
        try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/people/\(name)/authorization").json()
    }

    /// Waits until no grant of this caller waits for the credential; answers how the last ended.
    func waitUntilEnded(_ harness: ResilienceHarness, _ name: String, within seconds: Double = 90) async throws
        -> [String: Any]
    {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let current = try status(harness, name)
            if (current["pending"] as? [Any])?.isEmpty == true, let last = current["last"] as? [String: Any] {
                return last
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw SocketTestError("the device sign-in of \(name) did not end within \(seconds) s")
    }

    /// Waits for a webhook of `type` about `people/name`; answers its `data`.
    func webhook(_ receiver: TestWebhookReceiver, _ type: String, _ name: String) async throws -> [String: Any] {
        let arrived = try await waitUntil(within: 60) { !receiver.deliveries(of: type).isEmpty }
        let delivery = try #require(
            receiver.deliveries(of: type).first, "no \(type): \(receiver.deliveries.map(\.text))")
        #expect(arrived && delivery.credential == "people/\(name)")
        return delivery.data
    }

    @Test func theDaemonPollsUntilThePersonApprovesAndSlowsDownWhenTold() async throws {
        let receiver = try await TestWebhookReceiver()
        let (harness, server, daemon) = try await signIns.start(slowDown: 1, webhooks: receiver)
        defer { daemon.terminate() }
        let startedAt = Date()
        let started = try startDevice(harness, "ivan")
        let userCode = try #require(started["user_code"] as? String)
        #expect(started["verification_uri"] as? String == server.issuer + "/device")
        #expect((started["verification_uri_complete"] as? String)?.hasSuffix("user_code=" + userCode) == true)
        #expect(started["interval"] as? Int == 1 && started["device_code"] == nil, "\(started)")
        // The first poll is told to slow down: the interval becomes 6 s, and the grant still waits.
        let deadline = Date().addingTimeInterval(60)
        var waiting: [String: Any] = [:]
        while Date() < deadline {
            waiting = try #require((try status(harness, "ivan")["pending"] as? [[String: Any]])?.first)
            if waiting["interval"] as? Int == 6 { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(waiting["interval"] as? Int == 6 && waiting["kind"] as? String == "device", "\(waiting)")
        // A pending poll at the slower pace, then approval.
        let pendingPolled = try await waitUntil(within: 60) {
            (try? await server.devicePolls().polls[userCode] ?? 0) ?? 0 >= 2
        }
        #expect(pendingPolled)
        try await server.decideDevice(userCode)
        let last = try await waitUntilEnded(harness, "ivan")
        let elapsed = Date().timeIntervalSince(startedAt)
        #expect(last["outcome"] as? String == "authorized", "\(last)")
        let metadata = try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/people/ivan").json()
        #expect(metadata["provider"] as? String == "authlib" && metadata["has_refresh_token"] as? Bool == true)
        #expect((metadata["labels"] as? [String: String]) == ["via": "device"], "\(metadata)")
        let data = try await webhook(receiver, "credential.authorized", "ivan")
        #expect(data["status"] as? String == "active" && data["generation"] as? Int == 1, "\(data)")
        // Never faster than the interval: the slow_down after a second, then 6 s between polls
        // (a loaded machine only spaces them more).
        let (polls, deviceCodes, _) = try await server.devicePolls()
        let count = try #require(polls[userCode])
        #expect(count >= 3 && Double(count - 2) * 6 <= elapsed + 1, "\(count) polls in \(elapsed) s")
        // The tokens work: a forced refresh at Authlib rotates them.
        try await Task.sleep(for: .seconds(1.1))
        let refreshed = try UnixSocketHTTP.request(harness.socket, "POST", "/v1/credentials/people/ivan/refresh")
        #expect(refreshed.status == 200, "\(refreshed.text)")

        daemon.terminate()
        for code in deviceCodes { #expect(!daemon.log.contains(code), "a device code was logged") }
    }

    /// A person who denies: the grant ends as `access_denied`, nothing is stored; `tokenvault
    /// login --device` prints the code, waits while the daemon polls, and prints the credential.
    @Test func aDenialEndsTheGrantAndTheTerminalLoginWaitsForApproval() async throws {
        let receiver = try await TestWebhookReceiver()
        let (harness, server, daemon) = try await signIns.start(webhooks: receiver)
        defer { daemon.terminate() }
        let denied = try #require(try startDevice(harness, "jane")["user_code"] as? String)
        // While it waits, the credential shows it; its watch and the events stream hear the end.
        let shown = try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/people/jane")
        #expect(shown.status == 200 && shown.json()["status"] as? String == "pending_authorization", "\(shown.text)")
        let watch = try UnixSocketConnection(path: harness.socket)
        try watch.send("GET /v1/credentials/people/jane/watch HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try #require(try watch.readResponse(firstLine: true))
        #expect(first.status == 200 && first.text.contains("pending_authorization"), "\(first.text)")
        let events = try UnixSocketConnection(path: harness.socket)
        try events.send("GET /v1/events HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try events.skip(through: "\r\n\r\n", timeout: 10))
        try await server.decideDevice(denied, allow: false)
        let last = try await waitUntilEnded(harness, "jane")
        #expect(last["outcome"] as? String == "failed" && last["reason"] as? String == "access_denied", "\(last)")
        #expect(try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/people/jane").status == 404)
        // Keys sorted: the error comes before the type.
        #expect(try events.skip(through: #""error":{"code":"access_denied""#, timeout: 30))
        #expect(try events.skip(through: #""type":"authorization_failed""#, timeout: 5))
        #expect(try watch.skip(through: "0\r\n\r\n", timeout: 30), "the watch of a sign-in that failed did not end")
        let data = try await webhook(receiver, "credential.authorization_failed", "jane")
        #expect(data["reason"] as? String == "access_denied" && data["provider"] as? String == "authlib", "\(data)")

        let output = harness.directory.file("login-device.out")
        let errors = harness.directory.file("login-device.err")
        let login = try SpawnedProcess(
            executable: CommandRunner.locateBinary(),
            arguments: [
                "login", "people/kate", "--provider", "authlib", "--device", "--scope", "profile", "--timeout", "120",
                "--socket", harness.socket,
            ], environment: ["PATH": "/usr/bin:/bin"], stdout: output, stderr: errors)
        defer { login.signal(SIGKILL) }
        func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        var userCode: String?
        let deadline = Date().addingTimeInterval(120)
        while userCode == nil, Date() < deadline, login.isRunning {
            userCode = read(errors).firstMatch(of: /enter the code ([A-Z0-9-]+)/).map { String($0.output.1) }
            try await Task.sleep(for: .milliseconds(50))
        }
        let code = try #require(userCode, "no user code printed: \(read(errors))")
        #expect(read(output).hasPrefix(server.issuer + "/device?user_code="), "\(read(output))")
        try await server.decideDevice(code)
        #expect(login.waitUntilExit() == 0, "\(read(errors))")
        #expect(read(output).contains("people/kate"), "\(read(output))")

        // A grant that is denied makes the command fail with the reason.
        let refusing = try SpawnedProcess(
            executable: CommandRunner.locateBinary(),
            arguments: [
                "login", "people/lena", "--provider", "authlib", "--device", "--timeout", "120", "--socket",
                harness.socket,
            ], environment: ["PATH": "/usr/bin:/bin"], stdout: output + "2", stderr: errors + "2")
        defer { refusing.signal(SIGKILL) }
        var refusedCode: String?
        while refusedCode == nil, Date() < deadline, refusing.isRunning {
            refusedCode = read(errors + "2").firstMatch(of: /enter the code ([A-Z0-9-]+)/).map { String($0.output.1) }
            try await Task.sleep(for: .milliseconds(50))
        }
        try await server.decideDevice(try #require(refusedCode, "\(read(errors + "2"))"), allow: false)
        #expect(refusing.waitUntilExit() == 1)
        #expect(read(errors + "2").contains("access_denied"), "\(read(errors + "2"))")
    }

    /// SIGKILL while a grant waits: the next daemon resumes polling it. SIGKILL again while the
    /// server answers the poll that redeems the code (held 20 s): the courier keeps the answer,
    /// and the next daemon stores it without polling a spent code.
    @Test func aDaemonKilledWhileAGrantWaitsOrIsRedeemedLosesNothing() async throws {
        let (harness, server, first) = try await signIns.start(deviceTokenDelay: 20)
        let userCode = try #require(try startDevice(harness, "mark")["user_code"] as? String)
        try await Task.sleep(for: .seconds(2))
        first.kill()
        let second = try harness.startDaemon(logLevel: "info")
        try await server.decideDevice(userCode)
        // Kill the daemon once the server has the poll that redeems the code, while it holds the answer.
        let deadline = Date().addingTimeInterval(90)
        while Date() < deadline, try await !server.devicePolls().redeemed.contains(userCode) {
            try await Task.sleep(for: .milliseconds(100))
        }
        second.kill()
        let sent = try await server.devicePolls()
        #expect(sent.redeemed.contains(userCode), "the second daemon did not redeem the code")

        let third = try harness.startDaemon(logLevel: "info")
        defer { third.terminate() }
        let last = try await waitUntilEnded(harness, "mark")
        #expect(last["outcome"] as? String == "authorized", "\(last)")
        let metadata = try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/people/mark").json()
        #expect(metadata["has_refresh_token"] as? Bool == true, "\(metadata)")
        // The spent code was not presented again.
        #expect(
            try await server.devicePolls().polls[userCode] == sent.polls[userCode], "the redeemed code was polled again"
        )
    }
}
