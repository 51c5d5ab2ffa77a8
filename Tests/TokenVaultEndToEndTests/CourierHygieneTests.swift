import Foundation
import Testing
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// The courier is as hardened as the daemon: it runs with an environment reduced to
/// what a process needs (never the daemon's `CREDENTIALS_DIRECTORY`, its `TOKENVAULT_*` settings
/// or anything else a secret could be passed in), writes no core file and cannot be read
/// through /proc by its user; and it still refreshes for an instance whose client secret comes
/// from `$CREDENTIALS_DIRECTORY`, which it does not read.
@Suite struct CourierHygieneTests {
    @Test func theCourierGetsNoneOfTheDaemonsEnvironmentAndStillRefreshes() async throws {
        let harness = try await ResilienceHarness(
            lifetime: 2, limits: #"{"concurrency": 4}"#, refresh: #"{"lifetime_share": 0.5, "margin_seconds": 1}"#,
            clientSecretByCredential: true)
        // systemd's LoadCredential= would put the master key there too.
        let key = try Data(contentsOf: URL(fileURLWithPath: harness.dataDir + "/master.key"))
        writeFile(harness.credentialsDirectory + "/tokenvault.key", key, permissions: 0o400)
        let marker = "marker-\(UUID().uuidString)"
        let daemon = try harness.startDaemon(
            environment: ["CREDENTIALS_DIRECTORY": harness.credentialsDirectory, "TOKENVAULT_TEST_MARKER": marker])
        defer { daemon.terminate() }
        try harness.seed(2)
        // Refreshed through the courier with the secret the daemon read from the credential.
        let refreshed = try await waitUntil(within: 15) {
            try harness.list().allSatisfy { ($0["generation"] as? Int ?? 0) >= 2 }
        }
        #expect(refreshed, "not refreshed through the courier")
        let health = try UnixSocketHTTP.request(harness.socket, "GET", "/v1/health").json()
        let pid = try #require((health["courier"] as? [String: Any])?["pid"] as? Int)

        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }
        #expect(core?.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).first == "0", "\(core ?? "")")
        if let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ") {
            let entries = environ.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            #expect(!entries.contains { $0.hasPrefix("CREDENTIALS_DIRECTORY=") }, "\(entries)")
            #expect(!entries.contains { $0.hasPrefix("TOKENVAULT_") }, "\(entries)")
            #expect(!entries.contains { $0.contains(marker) })
            // Only a non-dumpable process's /proc files are root's: readable here means root.
            #expect(getuid() == 0, "the courier's /proc/\(pid)/environ is readable by its own user: it is dumpable")
        } else {
            // Not readable by its own user: not dumpable, which is the point.
            #expect(getuid() != 0)
        }
        #expect(!daemon.log.contains("could not disable core dumps"))
    }
}
