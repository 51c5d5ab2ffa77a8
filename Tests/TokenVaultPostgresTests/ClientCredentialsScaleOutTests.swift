import Foundation
import Testing
import TokenVaultTesting

/// Credentials obtained by a client credentials grant on a PostgreSQL vault shared by two daemons,
/// against Authlib's grant: each expiry is renewed once, by one node, while both nodes serve the
/// tokens. Each credential asks for a scope of its own, so the server's record of the grants it
/// answered (held a second each, so that overlapping renewals would both be answered) tells the
/// credentials' renewals apart.
@Suite struct ClientCredentialsScaleOutTests {
    @Test func twoNodesRenewEachExpiryOnce() async throws {
        let (postgres, database) = try await TestPostgres.makeDatabase()
        let names = ["m0", "m1", "m2"]
        let (harness, server) = try await SignInHarness.make(
            serverArguments: ["--lifetime", "6", "--client-credentials-delay", "1"],
            instance: #""client_secret_file": "$SECRET", "client_credentials": {"scopes": ["m0", "m1", "m2"]}"#,
            postgres: (postgres, database), nodes: 2)
        let daemons = try await offThePool { [try harness.startDaemon(node: 1), try harness.startDaemon(node: 2)] }
        defer { for daemon in daemons { _ = daemon.terminate() } }
        // The socket calls block: off the concurrency pool, which in-process servers beside answer on.
        func request(_ node: Int, _ method: String, _ target: String, body: String? = nil) async throws
            -> RawHTTPResponse
        {
            try await offThePool { try UnixSocketHTTP.request(harness.socket(node), method, target, body: body) }
        }
        for (index, name) in names.enumerated() {
            let put = try await request(
                index % 2 + 1, "PUT", "/v1/credentials/machines/\(name)",
                body: #"{"provider": "authlib", "grant": {"type": "client_credentials", "scopes": ["\#(name)"]}}"#)
            #expect(put.status == 201, "\(put.text)")
        }
        // Both nodes serve every credential for twenty seconds: about six renewals each.
        let end = Date().addingTimeInterval(20)
        while Date() < end {
            for node in [1, 2] {
                for name in names {
                    let read = try await request(node, "GET", "/v1/credentials/machines/\(name)/token?min_ttl=1")
                    #expect(read.status == 200, "node \(node), \(name): \(read.text)")
                }
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        // The generations first, then the grants answered: a renewal between the two reads adds
        // to the grants only.
        var shown: [String: [String: Any]] = [:]
        for name in names { shown[name] = try await request(1, "GET", "/v1/credentials/machines/\(name)").json() }
        let requests = try await server.hook("GET", "/test/client-credentials")["requests"] as? [[String: Any]] ?? []
        for name in names {
            let times = requests.filter { $0["scope"] as? String == name }.compactMap { $0["at"] as? Double }.sorted()
            let metadata = shown[name] ?? [:]
            let generation = metadata["generation"] as? Int ?? 0
            // Every grant the server answered became a generation (one more may be in flight).
            #expect(generation >= 5, "\(name): \(metadata)")
            #expect(
                times.count == generation || times.count == generation + 1,
                "\(name): \(times.count) grants answered for \(generation) generations")
            // Renewed about three seconds into each six-second token: two nodes renewing one expiry
            // would show grants within a second of each other.
            let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
            #expect(gaps.allSatisfy { $0 > 2 }, "\(name): grants \(gaps) s apart")
            #expect(metadata["status"] as? String == "active" && metadata["has_refresh_token"] as? Bool == false)
        }
    }
}
