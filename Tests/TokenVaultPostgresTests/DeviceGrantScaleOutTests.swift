import Foundation
import Testing
import TokenVaultTesting

/// Device grants on a PostgreSQL vault shared by two daemons, against Authlib's device grant:
/// each grant is polled by one node at a time (one poll sequence at the server's interval, not
/// one per node), whichever node started it, and ends stored once.
@Suite struct DeviceGrantScaleOutTests {
    @Test func twoNodesPollEachGrantOnce() async throws {
        let (postgres, database) = try await TestPostgres.makeDatabase()
        let (harness, server) = try await SignInHarness.make(
            deviceInterval: 3, postgres: (postgres, database), nodes: 2)
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
    }
}
