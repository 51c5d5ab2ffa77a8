import Foundation
import Histogram
import Synchronization
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

/// `http`: the provider round trip alone, no engine and no database, to split a refresh's
/// CPU between HTTP (client and test server together) and the rest. `concurrency` workers
/// each walk their own token family (every answer's refresh token is presented next), with
/// one of three clients:
///
/// - `oauth2`: `OAuth2Provider.refresh`, what the engine calls (AsyncHTTPClient, a fresh
///   connection per call, `Connection: close`);
/// - `fresh`: a bare NIO client (TokenVaultTesting's), also a fresh connection per call;
/// - `keepalive`: the same bare client, one kept-alive connection per worker.
struct HTTPBench {
    enum Client: String {
        case oauth2, fresh, keepalive
    }

    var client = Client.oauth2
    var concurrency = 64
    var seconds = 10.0
    var warmup = 2.0

    private struct Tally: Sendable {
        var recording = false
        var calls = 0
        var failures = 0
        var latency = PhaseRecorder.makeHistogram()
    }

    private final class Shared: Sendable {
        let tally: Mutex<Tally>
        init() { tally = Mutex(Tally()) }
    }

    func run() async throws {
        print(Machine.describe())
        let server = try await TestOAuthServer.start()
        let directory = TemporaryDirectory("tokenvault-refreshbench")
        let provider = try OAuth2Provider(
            settings: LoopbackSource.providerSettings(
                server: server, directory: directory.path, concurrency: concurrency),
            environment: [:])
        let shared = Shared()
        let deadline = monotonicSeconds() + warmup + seconds
        let client = client
        var first: (time: Double, usage: ResourceUsage, threads: ThreadCPU, machine: (busy: Double, total: Double))?
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                let family = server.issue()
                group.addTask {
                    var token = family.refreshToken
                    let connection =
                        client == .keepalive ? try await TestHTTPConnection.connect(port: server.port) : nil
                    let id = try CredentialID(namespace: "bench", name: "w\(worker)")
                    while monotonicSeconds() < deadline {
                        let started = monotonicSeconds()
                        let next = try? await Self.refresh(
                            token, client: client, provider: provider, server: server, connection: connection, id: id)
                        let micros = UInt64(max(1, (monotonicSeconds() - started) * 1e6))
                        shared.tally.withLock { tally in
                            guard tally.recording else { return }
                            if next == nil { tally.failures += 1 } else { tally.calls += 1 }
                            tally.latency.record(micros)
                        }
                        guard let next else { throw BenchError("a refresh failed; the family is lost") }
                        token = next
                    }
                    await connection?.close()
                }
            }
            try await Task.sleep(for: .seconds(warmup))
            shared.tally.withLock { $0 = Tally(recording: true) }
            first = (monotonicSeconds(), ResourceUsage.now(), ThreadCPU.now(), ProcessProbe.machineTicks())
            try await Task.sleep(for: .seconds(seconds))
            let last = (monotonicSeconds(), ResourceUsage.now(), ThreadCPU.now(), ProcessProbe.machineTicks())
            let result = shared.tally.withLock { tally in
                tally.recording = false
                return tally
            }
            report(
                result, elapsed: last.0 - first!.time, cpu: last.1.cpuSeconds - first!.usage.cpuSeconds,
                threads: last.2.since(first!.threads),
                switches: last.1.voluntarySwitches - first!.usage.voluntarySwitches,
                machineBusy: (last.3.busy - first!.machine.busy) / max(1, last.3.total - first!.machine.total)
                    * Double(ProcessInfo.processInfo.activeProcessorCount))
            try await group.waitForAll()
        }
        let twice = server.refreshTokensPresentedTwice.count
        print(
            twice == 0 && server.revokedFamilies == 0
                ? "checks: ok" : "FAILED: \(twice) refresh token(s) presented twice")
        try await provider.shutdown()
        await server.shutdown()
    }

    /// One refresh grant; the new refresh token, nil on any failure.
    private static func refresh(
        _ token: String, client: Client, provider: OAuth2Provider, server: TestOAuthServer,
        connection: TestHTTPConnection?, id: CredentialID
    ) async throws -> String? {
        let form = ["grant_type": "refresh_token", "refresh_token": token]
        let basic = (user: "vault-client", password: "vault-secret")
        let body: [UInt8]
        switch client {
        case .oauth2:
            let payload = try await provider.refresh(
                RefreshRequest(credentialID: id, refreshToken: SecretBytes(utf8: token)))
            return payload.secrets.refreshToken?.revealString()
        case .fresh:
            let response = try await TestHTTPClient.postForm(server.tokenURL, form, basicAuth: basic)
            guard response.status == 200 else { return nil }
            body = response.body
        case .keepalive:
            let response = try await connection!.postForm(server.options.tokenPath, form, basicAuth: basic)
            guard response.status == 200 else { return nil }
            body = response.body
        }
        return try TokenPayloadDecoder().decode(body).secrets.refreshToken?.revealString()
    }

    private func report(
        _ tally: Tally, elapsed: Double, cpu: Double, threads: [(group: String, seconds: Double, threads: Int)],
        switches: Int, machineBusy: Double
    ) {
        let calls = Double(max(tally.calls, 1))
        print(
            """
            http: client \(client.rawValue), \(concurrency) workers, \(format(warmup)) s warm-up + \
            \(format(elapsed, 1)) s measured
            throughput: \(format(Double(tally.calls) / elapsed)) refresh grants/s, \(tally.failures) failed
            latency µs: p50 \(tally.latency.valueAtPercentile(50)), p99 \(tally.latency.valueAtPercentile(99)), \
            max \(tally.latency.max)
            CPU: \(format(cpu / elapsed, 2)) cores, \(format(cpu / calls * 1e6)) µs per grant (client and server), \
            \(format(Double(switches) / calls, 1)) voluntary context switches per grant; machine busy \(format(machineBusy, 2)) cores
            """)
        for group in threads where group.seconds > 0.005 * elapsed {
            print(
                "  \(group.group): \(format(group.seconds / elapsed, 2)) cores, \(format(group.seconds / calls * 1e6)) µs per grant"
            )
        }
        print(
            "RESULT mode=http client=\(client.rawValue) concurrency=\(concurrency) "
                + "rps=\(format(Double(tally.calls) / elapsed)) cpu_us=\(format(cpu / calls * 1e6)) "
                + "p50=\(tally.latency.valueAtPercentile(50)) p99=\(tally.latency.valueAtPercentile(99))")
    }
}
