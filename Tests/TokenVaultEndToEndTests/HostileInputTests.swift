import Foundation
import Testing
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// Hostile input, each case against the built daemon: numbers that would trap, slow and greedy
/// clients, and callers who would wear out a provider shared with others.
@Suite struct HostileInputTests {
    /// `PUT` with an EBS `expired` of 1e300 milliseconds, and a provider answering a forced
    /// refresh and a code exchange with `Retry-After: 100000000000000000000`: each is refused
    /// or classified, and the daemon keeps serving.
    @Test func numbersNoTypeHoldsAreRefusedNotFatal() async throws {
        let harness = try await ResilienceHarness(
            lifetime: 3600, limits: #"{"concurrency": 4}"#, refresh: #"{"lifetime_share": 0.75}"#,
            providers: #""ebs-ms": {"kind": "ebs", "expired_unit": "milliseconds"}"#)
        let daemon = try harness.startDaemon()
        defer { daemon.terminate() }
        try harness.seed(1)

        let put = try UnixSocketHTTP.request(
            harness.socket, "PUT", "/v1/credentials/ebs/check",
            body: #"{"provider": "ebs-ms", "token": {"verify_token": "x", "expired": 1e300}}"#)
        #expect(put.status == 400 && put.json()["field"] as? String == "token.expired", "\(put.text)")

        // A forced refresh is allowed 10 s after the tokens were stored.
        try await Task.sleep(for: .seconds(10.2))
        let huge = "100000000000000000000"
        harness.server.script(.error(status: 503, code: "temporarily_unavailable", retryAfter: huge))
        let refresh = try UnixSocketHTTP.request(
            harness.socket, "POST", "/v1/credentials/\(ResilienceHarness.name(0))/refresh")
        #expect((500..<600).contains(refresh.status), "\(refresh.status) \(refresh.text)")
        #expect(refresh.headers["retry-after"].flatMap(Int.init).map { (0...86_400).contains($0) } ?? true)

        harness.server.script(.error(status: 503, code: "temporarily_unavailable", retryAfter: huge))
        let verifier = PKCE.makeVerifier()
        let exchange = try UnixSocketHTTP.request(
            harness.socket, "POST", "/v1/credentials/idp/new/exchange",
            body: #"""
                {"provider": "idp", "code": "c-1", "code_verifier": "\#(verifier)", "redirect_uri": "https://app.example/cb"}
                """#)
        #expect((500..<600).contains(exchange.status), "\(exchange.status) \(exchange.text)")
        #expect(exchange.headers["retry-after"].flatMap(Int.init).map { (0...86_400).contains($0) } ?? true)

        let health = try UnixSocketHTTP.request(harness.socket, "GET", "/v1/health")
        #expect(health.status == 200, "the daemon still answers")
        #expect(daemon.process.isRunning)
    }

    /// A request head sent a byte at a time, and a body a byte a second: each connection is
    /// closed within its deadline (`limits.request_head_seconds` 2; the body's minimum rate
    /// after its 5-second grace), whatever the idle timeout.
    @Test func tricklingClientsAreCutOffInTime() async throws {
        let harness = try await ResilienceHarness(
            lifetime: 3600, limits: #"{"concurrency": 4}"#, refresh: #"{"lifetime_share": 0.75}"#,
            sections: #""limits": {"request_head_seconds": 2, "idle_timeout_seconds": 60}"#)
        let daemon = try harness.startDaemon()
        defer { daemon.terminate() }
        let socket = harness.socket

        let head = try await offThePool { () -> Double in
            let connection = try UnixSocketConnection(path: socket)
            let started = Date()
            for byte in Array("GET /v1/health HTTP/1.1\r\nHost: x\r\n".utf8) {
                guard (try? connection.send([byte])) != nil else { break }
                if connection.waitForClose(timeout: 0.25) { break }
            }
            _ = connection.waitForClose(timeout: 10)
            return Date().timeIntervalSince(started)
        }
        #expect(head < 4, "a head trickled over \(head) s")

        let body = try await offThePool { () -> Double in
            let connection = try UnixSocketConnection(path: socket)
            try connection.send(
                "PUT /v1/credentials/idp/slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: 1000\r\n\r\n")
            let started = Date()
            while Date().timeIntervalSince(started) < 20 {
                guard (try? connection.send([UInt8(ascii: " ")])) != nil else { break }
                if connection.waitForClose(timeout: 1) { break }
            }
            return Date().timeIntervalSince(started)
        }
        #expect(body < 9, "a body trickled for \(body) s")
        #expect(try UnixSocketHTTP.request(socket, "GET", "/v1/health").status == 200)
    }

    /// One uid opens 2,000 idle connections: beyond its cap (1,024 by default) they are refused
    /// with 503 `too_many_connections`, the ones it holds still work, and another uid is served.
    @Test(.enabled(if: getuid() == 0, "switching to another uid needs root"))
    func oneUidCannotTakeEveryConnection() async throws {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = max(limit.rlim_cur, min(limit.rlim_max, 4096))
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        try #require(limit.rlim_cur >= 2100, "this test needs 2,100 open files (hard limit \(limit.rlim_max))")

        // The socket in a directory the other uid can reach; it gets in through the socket's
        // group (the daemon's, gid 0) and reads a token under its own rule.
        let other: uid_t = 65534
        let harness = try await ResilienceHarness(
            lifetime: 3600, limits: #"{"concurrency": 4}"#, refresh: #"{"lifetime_share": 0.75}"#,
            sections: #""access": [{"user": \#(other), "namespaces": ["idp"], "permissions": ["token:read"]}]"#)
        chmod(harness.directory.path, 0o755)
        let daemon = try harness.startDaemon()
        defer { daemon.terminate() }
        try harness.seed(1)
        let socket = harness.socket

        let (refused, heldStillWorks) = try await offThePool { () -> (Int, Bool) in
            var connections: [UnixSocketConnection] = []
            for _ in 0..<2000 { connections.append(try UnixSocketConnection(path: socket)) }
            var refused = 0
            for connection in connections.suffix(1000) {
                if let response = try? connection.readResponse(timeout: 0.5), response.status == 503,
                    response.json()["code"] as? String == "too_many_connections"
                {
                    refused += 1
                }
            }
            try connections[0].send("GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
            let held = try connections[0].readResponse()?.status == 200
            return (refused, held)
        }
        #expect(refused >= 970, "only \(refused) of the 976 beyond the cap were refused")
        #expect(heldStillWorks)

        // The CLI, copied where the other uid may run it.
        let binary = harness.directory.file("tokenvault")
        try FileManager.default.copyItem(atPath: harness.cli.executable, toPath: binary)
        chmod(binary, 0o755)
        let asOther = try CommandRunner(executable: "/usr/bin/setpriv").run([
            "--reuid", String(other), "--regid", "0", "--clear-groups", binary, "token", ResilienceHarness.name(0),
            "--socket", socket,
        ])
        #expect(asOther.status == 0 && asOther.stdout.hasPrefix("at-"), "\(asOther.status) \(asOther.stderr)")
    }

    /// `min_ttl=86400` on a one-hour token, twenty times: one refresh, then 409s; a forced
    /// refresh of a credential the provider keeps refusing, twenty times: one call.
    @Test func oneCallerCannotWearOutTheProvider() async throws {
        let harness = try await ResilienceHarness(
            lifetime: 3600, limits: #"{"concurrency": 4, "retry_base_seconds": 60}"#,
            refresh: #"{"lifetime_share": 0.75}"#)
        let daemon = try harness.startDaemon()
        defer { daemon.terminate() }
        try harness.seed(2)
        let refreshes = { harness.server.requests.filter { $0.form["grant_type"] == "refresh_token" }.count }

        var codes: [String] = []
        for _ in 0..<20 {
            let response = try UnixSocketHTTP.request(
                harness.socket, "GET", "/v1/credentials/\(ResilienceHarness.name(0))/token?min_ttl=86400")
            codes.append(response.status == 409 ? response.json()["code"] as? String ?? "?" : "\(response.status)")
        }
        #expect(codes.allSatisfy { $0 == "min_ttl_unreachable" }, "\(codes)")
        #expect(refreshes() == 1, "min_ttl=86400 twenty times called the provider \(refreshes()) times")

        try await Task.sleep(for: .seconds(10.2))
        for _ in 0..<20 { harness.server.script(.error(status: 400, code: "invalid_request")) }
        var statuses: [Int] = []
        for _ in 0..<20 {
            statuses.append(
                try UnixSocketHTTP.request(
                    harness.socket, "POST", "/v1/credentials/\(ResilienceHarness.name(1))/refresh"
                ).status)
        }
        #expect(
            refreshes() == 2,
            "twenty forced refreshes of a failing credential called the provider \(refreshes() - 1) times: \(statuses)")
        #expect(statuses.dropFirst().allSatisfy { $0 == 429 }, "\(statuses)")
    }
}
