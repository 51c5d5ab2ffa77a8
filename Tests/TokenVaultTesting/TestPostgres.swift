import Foundation
import Synchronization

/// A throwaway PostgreSQL server for the tests, started by the tests themselves: `initdb` and
/// `pg_ctl` from Debian's `postgresql` package (installed by `scripts/install-deps.sh`) in a
/// temporary directory, run as the `postgres` user when the tests run as root (`initdb` refuses
/// root). One server per test process, started on first use and stopped when the process exits;
/// each test gets a database of its own (`makeDatabase()`).
///
/// The server listens on a socket in its directory (trust) and on 127.0.0.1 at a free port
/// (password, SCRAM), so both ways of connecting are tested. `fsync` is off: these tests are
/// about behaviour, and the durability of PostgreSQL itself is not ours to test.
public final class TestPostgres: Sendable {
    public static let password = "tokenvault-test-password"
    public let directory: String
    public let port: Int
    /// `postgres` on the server, for `psql` and for making databases.
    public let superuser = TestPostgres.superuserName
    static let superuserName = "postgres"
    private let binaries: String

    /// The server of this test process, started on first use. Started and asked for databases
    /// on a queue of its own, never on the cooperative pool: `initdb` takes seconds, and blocking
    /// the pool's few threads that long starves every other test's timers.
    public static func shared(caller: String = #fileID) async throws -> TestPostgres {
        try placed(caller)
        return try await onQueue { try sharedBlocking() }
    }

    /// The test target every suite that starts a server lives in: `make test` runs it in a phase
    /// of its own (a server's start loads both cores, and the suites share one server), by
    /// target, not by a list of names that a new suite would have to join.
    public static let testTarget = "TokenVaultPostgresTests"

    /// A suite in another target that asks for a server fails at once, saying where it belongs.
    private static func placed(_ caller: String) throws {
        guard caller.hasPrefix(testTarget + "/") else {
            throw PlacementError(
                description: "\(caller) uses PostgreSQL: move it to Tests/\(testTarget), which make test runs in "
                    + "its own phase")
        }
    }

    struct PlacementError: Error, CustomStringConvertible {
        let description: String
    }

    /// A new, empty database on the shared server; its name.
    public static func makeDatabase(caller: String = #fileID) async throws -> (TestPostgres, String) {
        try placed(caller)
        return try await onQueue {
            let server = try sharedBlocking()
            return (server, try server.makeDatabase())
        }
    }

    /// A new database on the shared server as operators configure one: its TCP URL and the
    /// superuser's password in a file (mode 0600) in `directory`.
    public static func makeDatabaseWithPasswordFile(in directory: TemporaryDirectory, caller: String = #fileID)
        async throws -> (server: TestPostgres, url: String, passwordFile: String)
    {
        let (server, database) = try await makeDatabase(caller: caller)
        let passwordFile = directory.file("pg-password")
        writeFile(passwordFile, Data((password + "\n").utf8), permissions: 0o600)
        return (server, server.tcpURL(database: database), passwordFile)
    }

    /// A server of the caller's own, for a test that stops and starts it (the shared one serves
    /// other tests meanwhile). `destroy()` it at the end.
    public static func dedicated(caller: String = #fileID) async throws -> TestPostgres {
        try placed(caller)
        return try await onQueue { try TestPostgres() }
    }

    /// An asynchronous standby of this server, as operators make one (`pg_basebackup -R`): it
    /// streams from `replicationPort` (a `PartitionProxy` in front of this server, so a test can
    /// hold the stream back) and listens on a port of its own. `destroy()` it at the end.
    public func makeStandby(replicationPort: Int) async throws -> TestPostgres {
        try await Self.onQueue { [self] in try TestPostgres(standbyOf: self, replicationPort: replicationPort) }
    }

    /// SIGKILLs the server: the postmaster and every backend (their process group, which
    /// `pg_ctl` made), as a host that dies takes them all; waits until the postmaster is gone.
    public func killAsync() async throws {
        let text = try String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8)
        guard let pid = text.split(separator: "\n").first.flatMap({ pid_t($0) }), pid > 1 else {
            throw TestPostgresError("no postmaster.pid to kill")
        }
        kill(-pid, SIGKILL)
        kill(pid, SIGKILL)
        for _ in 0..<200 where kill(pid, 0) == 0 { try await Task.sleep(for: .milliseconds(25)) }
        // A later `pg_ctl stop` (in `destroy()`) would otherwise signal whatever process has the
        // dead postmaster's number by then: numbers come round again within a minute here.
        unlink(directory + "/data/postmaster.pid")
    }

    /// Ends the standby's recovery: it takes writes, on a new timeline (`pg_ctl promote`).
    public func promoteAsync() async throws {
        _ = try await Self.onQueue { [self] in
            try run([binaries + "/pg_ctl", "-D", directory + "/data", "-w", "-t", "60", "promote"], log: "promote.log")
        }
    }

    /// A new, empty database on this server; its name.
    public func makeDatabaseAsync() async throws -> String {
        try await Self.onQueue { [self] in try makeDatabase() }
    }

    /// Stops the server (as a crash would) or starts it again, off the cooperative pool.
    public func stopAsync() async throws { try await Self.onQueue { [self] in try stop() } }
    public func startAsync() async throws { try await Self.onQueue { [self] in try start() } }

    /// Stops the server and removes its directory.
    public func destroy() {
        try? stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static let queue = DispatchQueue(label: "tokenvault.test-postgres")

    private static func onQueue<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws
        -> Result
    {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Swift.Result { try body() }) }
        }
    }

    private static func sharedBlocking() throws -> TestPostgres {
        try sharedServer.withLock { server in
            if let server { return server }
            let started = try TestPostgres()
            server = started
            atexit {
                guard let server = TestPostgres.sharedServer.withLock({ $0 }) else { return }
                try? server.stop()
                try? FileManager.default.removeItem(atPath: server.directory)
            }
            return started
        }
    }

    private static let sharedServer = Mutex<TestPostgres?>(nil)

    private init(standbyOf primary: TestPostgres, replicationPort: Int) throws {
        binaries = primary.binaries
        directory = try Self.makeDirectory()
        try Self.run(
            [
                binaries + "/pg_basebackup", "-D", directory + "/data", "-R", "-X", "stream", "--no-sync", "-c", "fast",
                "-d",
                "host=127.0.0.1 port=\(replicationPort) user=\(Self.superuserName) password=\(Self.password)",
            ], in: directory, log: "basebackup.log")
        port = try Self.startOnFreePort(binaries: binaries, directory: directory)
    }

    private init() throws {
        guard
            let binaries = try FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")
                .sorted().last.map({ "/usr/lib/postgresql/\($0)/bin" }),
            FileManager.default.isExecutableFile(atPath: binaries + "/initdb")
        else {
            throw TestPostgresError(
                "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run `make test`, which installs it")
        }
        self.binaries = binaries
        let directory = try Self.makeDirectory()
        self.directory = directory
        try Self.write(Self.password + "\n", to: directory + "/pwfile")
        try Self.run(
            [
                binaries + "/initdb", "-D", directory + "/data", "-U", Self.superuserName,
                "--pwfile=\(directory)/pwfile",
                "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync",
            ], in: directory, log: "initdb.log")
        port = try Self.startOnFreePort(binaries: binaries, directory: directory)
    }

    /// A port free when chosen may be taken before the server binds it: another, then.
    private static func startOnFreePort(binaries: String, directory: String) throws -> Int {
        var attempt = 0
        while true {
            let port = try freePort()
            do {
                try start(binaries: binaries, directory: directory, port: port)
                return port
            } catch let error as TestPostgresError where attempt < 4 && error.description.contains("pg_ctl") {
                attempt += 1
                let log = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
                guard log.contains("Address already in use") else { throw error }
            }
        }
    }

    /// The socket directory's URL form (`host=` names the directory).
    public func socketURL(database: String, user: String = "postgres") -> String {
        "postgres://\(user)@/\(database)?host=\(directory)&port=\(port)"
    }

    /// Over TCP with a password (from a file, as the daemon reads it).
    public func tcpURL(database: String, user: String = "postgres") -> String {
        "postgres://\(user)@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    /// A new, empty database; its name (blocking: tests use `TestPostgres.makeDatabase()`).
    func makeDatabase() throws -> String {
        let name = "tv_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        try psql("CREATE DATABASE \(name)")
        return String(name)
    }

    /// Runs SQL as the superuser (for tests that kill connections, stop the server, inspect rows).
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") throws -> String {
        try run(
            [
                binaries + "/psql", "-h", directory, "-p", "\(port)", "-U", superuser, "-d", database, "-At", "-v",
                "ON_ERROR_STOP=1", "-c", sql,
            ], log: nil)
    }

    /// Stops the server at once (as a crash would), or starts it again.
    public func stop() throws {
        try run([binaries + "/pg_ctl", "-D", directory + "/data", "-m", "immediate", "-w", "stop"], log: "pg_ctl.log")
    }

    public func start() throws {
        try Self.start(binaries: binaries, directory: directory, port: port)
    }

    /// Room for every suite at once on the shared server: each opening holds a writer, readers
    /// and a listener, three-node tests run daemons and a CLI beside them, and a `make test` run
    /// reached 200 ("too many clients already" for `tokenvault verify` in ScaleOutTests).
    private static func start(binaries: String, directory: String, port: Int) throws {
        try run(
            [
                binaries + "/pg_ctl", "-D", directory + "/data", "-l", directory + "/server.log", "-w", "-t", "60",
                "-o", "-k \(directory) -p \(port) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=400",
                "start",
            ], in: directory, log: "pg_ctl.log")
    }

    // MARK: Processes

    private static var isRoot: Bool { getuid() == 0 }

    /// Runs `arguments`, as `postgres` when we are root; returns standard output.
    ///
    /// Output in files (`SpawnedProcess`): `pg_ctl start` leaves a server holding what it
    /// inherited, so a pipe would never end; the server inherits nothing beyond them.
    @discardableResult
    private func run(_ arguments: [String], log: String?) throws -> String {
        try Self.run(arguments, in: directory, log: log)
    }

    @discardableResult
    private static func run(_ arguments: [String], in directory: String, log: String?) throws -> String {
        let command = Self.isRoot ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + arguments : arguments
        let name = log ?? "command-\(UUID().uuidString.prefix(8))"
        let outputPath = directory + "/" + name + ".out"
        let errorPath = directory + "/" + name + ".err"
        let status = try SpawnedProcess(
            executable: command[0], arguments: Array(command.dropFirst()),
            environment: ProcessInfo.processInfo.environment, stdout: outputPath, stderr: errorPath
        ).waitUntilExit()
        let stdout = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        if log == nil {
            unlink(outputPath)
            unlink(errorPath)
        }
        guard status == 0 else {
            throw TestPostgresError(
                "\((arguments[0] as NSString).lastPathComponent) failed (status \(status)): \(stderr) "
                    + "(server log: \(directory)/server.log)")
        }
        return stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A directory the `postgres` user owns when we are root.
    private static func makeDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "tokenvault-pg-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        if isRoot {
            guard let user = getpwnam("postgres") else {
                throw TestPostgresError("no postgres user: is Debian's postgresql package installed?")
            }
            guard chown(path, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
                throw TestPostgresError("cannot give \(path) to the postgres user")
            }
        }
        chmod(path, 0o700)
        return path
    }

    private static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        if isRoot, let user = getpwnam("postgres") { chown(path, user.pointee.pw_uid, user.pointee.pw_gid) }
        chmod(path, 0o600)
    }

    /// A TCP port nobody listens on now, below Linux's ephemeral range (32768 and up by
    /// default), which the kernel hands out for every outgoing connection and `bind` to port 0:
    /// a port taken from there and released was seen taken by another test's socket before the
    /// server could bind it.
    private static func freePort() throws -> Int {
        for _ in 0..<100 {
            let candidate = Int.random(in: 20_000..<32_000)
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { throw TestPostgresError("socket() failed") }
            defer { close(descriptor) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(candidate).bigEndian
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            if bound { return candidate }
        }
        throw TestPostgresError("cannot find a free port")
    }
}

public struct TestPostgresError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
