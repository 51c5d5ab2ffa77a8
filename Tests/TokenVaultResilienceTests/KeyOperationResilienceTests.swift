import Foundation
import Testing
import TokenVaultTesting

/// Key operations next to a running daemon, against the built binary: rotation while it
/// refreshes loses nothing, and no order of rekey, rotation and restarts leaves a vault that does
/// not open. Part of the serialized resilience run (`--filter ResilienceTests`).
@Suite(.serialized) struct KeyOperationResilienceTests {
    /// `tokenvault rotate-key` again and again while the daemon refreshes 200 credentials against
    /// the rotating, reuse-detecting provider, whose answers are delayed so that commits overlap
    /// each rotation: no credential ends `needs_reauth`, no refresh token is presented twice, and
    /// `verify` is clean. (Before the ledger, a rotation by the CLI deleted the term the daemon
    /// was sealing under: 44 of 200 credentials were lost in 90 s.)
    @Test func rotateKeyWhileRefreshingLosesNothing() async throws {
        let count = 200
        let harness = try await ResilienceHarness(
            lifetime: 3, limits: #"{"concurrency": 32, "rate_per_second": 5000, "burst": 1000}"#,
            refresh: #"{"lifetime_share": 0.5, "margin_seconds": 1, "jitter": 0.1}"#, answerDelay: 0.05...0.5)
        let daemon = try harness.startDaemon()
        try harness.seed(count)
        let end = Date().addingTimeInterval(20)
        var rotations = 0
        var failures: [String] = []
        while Date() < end {
            let result = try await offThePool { try harness.cli.run(["rotate-key", "--data-dir", harness.dataDir]) }
            if result.status == 0, result.stdout.contains("rotated by the running daemon") {
                rotations += 1
            } else {
                failures.append("\(result.status): \(result.stdout) \(result.stderr)")
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 200...800)))
        }
        // Let refreshes in flight and any held commit finish.
        try await Task.sleep(for: .seconds(2))
        let listed = try harness.list()
        #expect(daemon.terminate() == 0)
        let verify = try harness.verify()

        #expect(failures.isEmpty, "rotate-key failed: \(failures.prefix(3))")
        #expect(rotations >= 10, "only \(rotations) rotations")
        #expect(listed.count == count)
        let notActive = listed.filter { $0["status"] as? String != "active" }
        #expect(notActive.isEmpty, "\(notActive.count) not active, e.g. \(notActive.prefix(2))")
        #expect(harness.server.refreshTokensPresentedTwice.isEmpty, "a refresh token was presented twice")
        #expect(harness.server.revokedFamilies == 0)
        #expect(harness.server.successfulRefreshes > 2 * count, "too few refreshes to overlap the rotations")
        #expect(verify.status == 0, "verify: \(verify.stdout) \(verify.stderr)")
        #expect(!daemon.log.contains("refresh could not run"), "\(daemon.log.suffix(2000))")
        #expect(ResilienceHarness.leakedTokens(in: daemon.log).isEmpty, "tokens in the daemon log")
        print(
            "rotate-key under load: \(rotations) rotations, \(harness.server.successfulRefreshes) refreshes, "
                + "\(notActive.count) not active")
    }

    enum KeyOperation: String, CaseIterable, Sendable {
        /// `tokenvault rekey`: a new master key in the default key file.
        case cliRekey
        /// `POST /v1/admin/rotate-key` (needs a running daemon).
        case apiRotate
        /// `tokenvault rotate-key` (through the daemon when one runs).
        case cliRotate
        /// Stop the daemon if it runs, start it if not.
        case toggleDaemon
    }

    /// Every order of the four operations, starting with a running daemon: each command either
    /// works or is refused with a message that says why, `verify` with the key the operator was
    /// told is current opens every field after every step, and a daemon started at the end
    /// serves the credential stored at the start.
    @Test func everyOrderOfKeyOperationsLeavesAVaultThatOpens() async throws {
        let orders = Self.permutations(KeyOperation.allCases)
        let problems = try await withThrowingTaskGroup(of: [String].self) { group in
            var running = 0
            var problems: [String] = []
            for order in orders {
                if running == 3 {
                    problems += try await group.next() ?? []
                    running -= 1
                }
                group.addTask { try await offThePool { try Self.play(order) } }
                running += 1
            }
            for try await found in group { problems += found }
            return problems
        }
        #expect(problems.isEmpty, "\(problems.count) problems, e.g. \(problems.prefix(4))")
    }

    /// Plays one order; returns what went wrong (empty: nothing).
    static func play(_ order: [KeyOperation]) throws -> [String] {
        let directory = TemporaryDirectory("tokenvault-keyops")
        let dataDir = directory.file("data")
        let socket = directory.file("keyops.sock")
        let cli = CommandRunner()
        let label = order.map(\.rawValue).joined(separator: " ")
        var problems: [String] = []
        func check(_ condition: Bool, _ what: @autoclosure () -> String) {
            if !condition { problems.append("[\(label)] \(what())") }
        }
        func startDaemon() throws -> DaemonProcess {
            try DaemonProcess(arguments: ["--data-dir", dataDir], socketPath: socket, logDirectory: directory.path)
        }

        _ = try cli.run(["init", "--data-dir", dataDir])
        var daemon: DaemonProcess? = try startDaemon()
        let stored = try UnixSocketHTTP.request(
            socket, "PUT", "/v1/credentials/keys/alice",
            body: #"{"provider":"oauth2","token":{"access_token":"at-keyops","refresh_token":"rt-keyops"}}"#)
        check(stored.status == 201, "PUT answered \(stored.status)")

        for operation in order {
            switch operation {
            case .cliRekey:
                let result = try cli.run(["rekey", "--data-dir", dataDir])
                if daemon != nil {
                    check(result.status == 1, "rekey under a daemon exited \(result.status)")
                    check(
                        result.stderr.contains("must not run under a running daemon")
                            && result.stderr.contains("pid \(daemon!.process.processIdentifier)"),
                        "rekey refusal says: \(result.stderr)")
                } else {
                    check(result.status == 0, "rekey failed: \(result.stderr)")
                    check(result.stdout.contains("new key in \(dataDir)/master.key"), "rekey said: \(result.stdout)")
                }
            case .apiRotate:
                guard daemon != nil else { continue }  // no daemon, no API to call
                let response = try UnixSocketHTTP.request(socket, "POST", "/v1/admin/rotate-key")
                check(response.status == 200, "admin rotate-key answered \(response.status): \(response.text)")
            case .cliRotate:
                let result = try cli.run(["rotate-key", "--data-dir", dataDir])
                check(result.status == 0, "rotate-key failed: \(result.stderr)")
                let expected = daemon != nil ? "rotated by the running daemon" : "active data key term"
                check(result.stdout.contains(expected), "rotate-key said: \(result.stdout)")
            case .toggleDaemon:
                if let running = daemon {
                    check(running.terminate() == 0, "daemon did not stop cleanly: \(running.log.suffix(500))")
                    daemon = nil
                } else {
                    daemon = try startDaemon()
                }
            }
            let verify = try cli.run(["verify", "--data-dir", dataDir])
            check(verify.status == 0, "verify after \(operation.rawValue): \(verify.stdout) \(verify.stderr)")
        }
        if let running = daemon { check(running.terminate() == 0, "daemon did not stop cleanly") }
        let restarted = try startDaemon()
        let token = try UnixSocketHTTP.request(socket, "GET", "/v1/credentials/keys/alice/token")
        check(
            token.status == 200 && token.json()["access_token"] as? String == "at-keyops", "token read: \(token.text)")
        check(restarted.terminate() == 0, "final daemon did not stop cleanly")
        return problems
    }

    static func permutations<Element>(_ elements: [Element]) -> [[Element]] {
        guard elements.count > 1 else { return [elements] }
        return elements.indices.flatMap { index in
            var rest = elements
            let first = rest.remove(at: index)
            return permutations(rest).map { [first] + $0 }
        }
    }
}
