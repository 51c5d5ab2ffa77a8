import Foundation
import Testing
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// PostgreSQL's own disk full under a node, against the loopback provider with rotation and
/// reuse detection. The vault's database lives in a tablespace on a small tmpfs the test mounts
/// (the write-ahead log stays on the server's own disk, so the server keeps running and refuses
/// each write that needs a new page, `could not extend file`, SQLSTATE 53100, as a full data
/// disk does). The answers that arrive meanwhile are held, stored tokens are served, health says
/// why, and once space returns the held answers are committed without a restart; no refresh
/// token is presented twice. Mounting takes root, which `make test` has. The server is the
/// test's own: while the tablespace is full, any backend that evicts one of its dirty pages, and
/// every checkpoint, fails to write, so the shared server's other suites would fail with it.
@Suite(.serialized) struct PostgresFullDiskTests {
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs takes root"))
    func aFullDataDiskHoldsTheAnswersServesWhatIsStoredAndLosesNothing() async throws {
        let count = 20
        let server = try await TestPostgres.dedicated()
        defer { server.destroy() }
        let disk = try SmallDisk(megabytes: 48)
        defer { disk.unmount() }
        let database = "tv_full_" + UUID().uuidString.prefix(8).lowercased()
        let tablespace = database + "_space"
        // Dropped whatever was made, before the tmpfs goes (the defers run last first).
        defer {
            for statement in [
                "DROP DATABASE IF EXISTS \(database) WITH (FORCE)", "DROP TABLESPACE IF EXISTS \(tablespace)",
            ] {
                do { try server.psql(statement) } catch { print("cleaning up: \(error)") }
            }
        }
        try await offThePool {
            try server.psql("CREATE TABLESPACE \(tablespace) LOCATION '\(disk.path)'")
            try server.psql("CREATE DATABASE \(database) TABLESPACE \(tablespace)")
        }
        let harness = try await ResilienceHarness(
            lifetime: 40, limits: #"{"concurrency": 16, "rate_per_second": 5000, "burst": 1000}"#,
            // A refresh every 6 s or so, each answered 2-4 s after it was sent: calls are in
            // flight when the disk fills.
            refresh: #"{"lifetime_share": 0.15, "margin_seconds": 1, "jitter": 0.2}"#, answerDelay: 2...4,
            timeoutSeconds: 10, postgres: (server, database))
        let daemon = try harness.startDaemon(logLevel: "info")
        defer { daemon.kill() }
        try harness.seed(count)
        try await Task.sleep(for: .seconds(8))
        #expect(try await waitUntil(within: 20) { harness.server.successfulRefreshes >= count })

        try disk.fill()
        let filledAt = Date()
        let answeredBefore = harness.server.successfulRefreshes
        // Seen while full: the commits the server refused, held, and health saying why.
        let seen = HealthWhileFull()
        async let watched: Void = seen.watch(harness.socket, until: filledAt.addingTimeInterval(20))
        // Reads go on from what is stored (every token lives 40 s) while nothing can be written.
        let report = try await offThePool {
            try harness.readTokens(until: filledAt.addingTimeInterval(20), count: count, minimumTTL: 0, pause: 0.05)
        }
        try await watched
        #expect(report.served > 100 && report.invalid.isEmpty, "\(report.served) served, \(report.invalid.prefix(3))")
        let answeredWhileFull = harness.server.successfulRefreshes - answeredBefore
        #expect(answeredWhileFull > 0, "no answer arrived while the disk was full")
        #expect(seen.heldCommits > 0, "no commit was held while the disk was full")
        #expect(seen.writeError?.contains("53100") == true, "health said: \(seen.writeError ?? "nothing")")
        #expect(daemon.log.contains("53100"), "the log does not say why the database refused")

        disk.release()
        try await harness.checkHeldAnswersCommitted(by: daemon, count: count)
        print(
            "PostgreSQL's disk full for 20 s: \(report.served) tokens served, \(seen.heldCommits) commits held at "
                + "most, \(answeredWhileFull) answers in all, none presented twice")
    }
}

/// The most held commits and the write error health reported while it was polled.
private final class HealthWhileFull: @unchecked Sendable {
    private let lock = NSLock()
    private var held = 0
    private var error: String?

    var heldCommits: Int { lock.withLock { held } }
    var writeError: String? { lock.withLock { error } }

    func watch(_ socket: String, until end: Date) async throws {
        while Date() < end {
            let reading = try? await offThePool { () -> (Int, String?) in
                let health = try UnixSocketHTTP.request(socket, "GET", "/v1/health").json()
                let database = health["database"] as? [String: Any]
                return (database?["held_commits"] as? Int ?? 0, database?["write_error"] as? String)
            }
            if let (count, why) = reading {
                lock.withLock {
                    held = max(held, count)
                    error = error ?? why
                }
            }
            try await Task.sleep(for: .milliseconds(250))
        }
    }
}

/// A tmpfs of a few megabytes, owned by the `postgres` user (the tablespace's directory), which
/// `fill()` fills to the last byte with a file of its own and `release()` empties again.
private struct SmallDisk {
    let mountPoint: String
    var path: String { mountPoint + "/space" }
    var filler: String { mountPoint + "/filler" }

    init(megabytes: Int) throws {
        mountPoint = NSTemporaryDirectory() + "tokenvault-small-disk-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        guard let user = getpwnam("postgres") else { throw SocketTestError("no postgres user") }
        let mounted = try CommandRunner(executable: "/usr/bin/mount").run([
            "-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0755", "tokenvault-small-disk", mountPoint,
        ])
        guard mounted.status == 0 else { throw SocketTestError("mount: \(mounted.stderr)") }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        } catch {
            unmount()
            throw error
        }
        chown(path, user.pointee.pw_uid, user.pointee.pw_gid)
        chmod(path, 0o700)
    }

    /// Writes zeros until the filesystem has no byte left.
    func fill() throws {
        let descriptor = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { throw SocketTestError("cannot create \(filler)") }
        defer { close(descriptor) }
        let chunk = [UInt8](repeating: 0, count: 65_536)
        var size = chunk.count
        while size > 0 {
            if chunk.withUnsafeBytes({ write(descriptor, $0.baseAddress, size) }) < 0 {
                guard errno == ENOSPC else { throw SocketTestError("filling: \(String(cString: strerror(errno)))") }
                size /= 2
            }
        }
    }

    func release() { unlink(filler) }

    /// Says so when the tmpfs is still in use (a database left in it): it is then detached
    /// lazily, and goes once PostgreSQL lets go of its files.
    func unmount() {
        release()
        let unmounted = try? CommandRunner(executable: "/usr/bin/umount").run([mountPoint])
        if unmounted?.status != 0 {
            print("cleaning up: umount \(mountPoint): \(unmounted?.stderr ?? "did not run"); detaching it lazily")
            _ = try? CommandRunner(executable: "/usr/bin/umount").run(["-l", mountPoint])
        }
        try? FileManager.default.removeItem(atPath: mountPoint)
    }
}
