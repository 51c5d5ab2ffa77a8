import Foundation
import Testing
import TokenVaultTesting

/// Device grants on a PostgreSQL vault shared by two daemons, against Authlib's device grant:
/// each grant is polled by one node at a time (one poll sequence at the server's interval, not
/// one per node), whichever node started it, and ends stored once; a refused one ends its watch
/// and is announced on the events stream of both nodes.
@Suite struct DeviceGrantScaleOutTests {
    @Test func twoNodesPollEachGrantOnce() async throws {
        let (postgres, database) = try await TestPostgres.makeDatabase()
        let (harness, server) = try await SignInHarness.make(
            deviceInterval: 3, sections: #""limits": {"stream_heartbeat_seconds": 1}"#, postgres: (postgres, database),
            nodes: 2)
        let daemons = [try harness.startDaemon(node: 1), try harness.startDaemon(node: 2)]
        defer { for daemon in daemons { _ = daemon.terminate() } }
        var userCodes: [String: String] = [:]
        for (index, node) in [1, 2, 1, 2].enumerated() {
            let started = try UnixSocketHTTP.request(
                harness.socket(node), "POST", "/v1/credentials/people/p\(index)/authorization",
                body: #"{"provider": "authlib", "mode": "device", "scopes": ["profile"]}"#)
            #expect(started.status == 201, "\(started.text)")
            userCodes["p\(index)"] = try #require(started.json()["user_code"] as? String)
        }
        try await Task.sleep(for: .seconds(16))
        // Both nodes look every second; a grant both polled would show polls close together
        // (both see it due at the same moment), and twice as many.
        let times = try await server.devicePollTimes()
        for (name, code) in userCodes {
            let polls = try #require(times[code], "\(name) was never polled")
            let gaps = zip(polls.dropFirst(), polls).map { $0 - $1 }
            #expect(polls.count >= 3 && polls.count <= 7, "\(name): \(polls.count) polls in 16 s at a 3 s interval")
            #expect(gaps.allSatisfy { $0 > 2 }, "\(name): polls \(gaps) s apart at a 3 s interval")
        }
        // Every node's events stream announces each sign-in's end, whichever node polled it.
        var events: [UnixSocketConnection] = []
        for node in [1, 2] {
            let stream = try UnixSocketConnection(path: harness.socket(node))
            try stream.send("GET /v1/events HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try stream.skip(through: "\r\n\r\n", timeout: 10), "node \(node): no events stream")
            events.append(stream)
        }
        for code in userCodes.values { try await server.decideDevice(code) }
        for name in userCodes.keys {
            let stored = try await waitUntil(within: 60) {
                // While the grant waits the credential shows `pending_authorization`.
                (try? UnixSocketHTTP.request(harness.socket(1), "GET", "/v1/credentials/people/\(name)").json())?[
                    "status"] as? String == "active"
            }
            #expect(stored, "\(name) was not stored")
            let metadata = try UnixSocketHTTP.request(harness.socket(2), "GET", "/v1/credentials/people/\(name)").json()
            #expect(metadata["generation"] as? Int == 1, "\(name) stored more than once: \(metadata)")
        }
        for (index, stream) in events.enumerated() {
            for _ in userCodes {
                #expect(
                    try stream.skip(through: #""type":"authorized""#, timeout: 30),
                    "the events stream of node \(index + 1) did not announce every sign-in")
            }
        }
        try await refusedSignInEndsItsWatchOnBothNodes(harness, server, events: events)
    }

    /// The watch of a credential a device sign-in was to create ends on every node when the
    /// person refuses, and every node's events stream announces `authorization_failed`, whichever
    /// node polled: the polling node's streams hear the end, and the other node's through the
    /// change feed. Run on the daemons and the events streams of the test above: two more
    /// daemons beside the other PostgreSQL suites slow those past their timeouts.
    func refusedSignInEndsItsWatchOnBothNodes(
        _ harness: ResilienceHarness, _ server: AuthorizationServerProcess, events: [UnixSocketConnection]
    ) async throws {
        let started = try UnixSocketHTTP.request(
            harness.socket(1), "POST", "/v1/credentials/people/refused/authorization",
            body: #"{"provider": "authlib", "mode": "device", "scopes": ["profile"]}"#)
        let userCode = try #require(started.json()["user_code"] as? String, "\(started.text)")
        var watches: [UnixSocketConnection] = []
        for node in [1, 2] {
            let watch = try UnixSocketConnection(path: harness.socket(node))
            try watch.send("GET /v1/credentials/people/refused/watch HTTP/1.1\r\nHost: x\r\n\r\n")
            let first = try #require(try watch.readResponse(firstLine: true))
            #expect(first.text.contains("pending_authorization"), "node \(node): \(first.text)")
            watches.append(watch)
        }
        try await server.decideDevice(userCode, allow: false)
        for (index, watch) in watches.enumerated() {
            #expect(try watch.skip(through: "0\r\n\r\n", timeout: 30), "the watch on node \(index + 1) did not end")
        }
        for (index, stream) in events.enumerated() {
            #expect(
                try stream.skip(through: #""error":{"code":"access_denied""#, timeout: 30)
                    && stream.skip(through: #""type":"authorization_failed""#, timeout: 5),
                "the events stream of node \(index + 1) did not announce the refusal")
        }
    }
}
