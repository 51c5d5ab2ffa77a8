import Foundation
import Testing
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// `tokenvault backup` and `restore` run as root on the data directory of a daemon with its own
/// user (uid 65534 here), which that user controls: links it planted, a daemon answer it forged
/// and a file it swapped during the check must change nothing outside the data directory.
/// Root only (CI runs as root); every test compares a root-owned folder beside the data
/// directory, file by file (owner, mode, bytes), before and after.
@Suite(.enabled(if: getuid() == 0, "needs root"))
struct RootBackupRestoreTests {
    static let serviceUser: uid_t = 65534
    let directory = TemporaryDirectory("tokenvault-root-backup")
    let cli = CommandRunner()
    var dataDir: String { directory.file("data") }
    var outside: String { directory.file("outside") }

    init() throws {
        _ = try cli.run(["init", "--data-dir", dataDir])
        // The service account owns the directory and the database; the key stays root's, as
        // the packaging keeps it in /etc/tokenvault.
        for name in ["", "/vault.db", "/vault.db-wal", "/vault.db-shm"] {
            chown(dataDir + name, Self.serviceUser, Self.serviceUser)
        }
        mkdir(outside, 0o755)
        for (name, mode) in [("victim", mode_t(0o644)), ("secret", 0o600)] {
            writeFile(outside + "/" + name, Data("precious \(name)\n".utf8))
            chmod(outside + "/" + name, mode)
        }
    }

    func run(_ arguments: [String]) throws -> CommandRunner.Result {
        try cli.run(arguments + ["--data-dir", dataDir])
    }

    /// Every entry of the outside folder with its owner, mode and bytes.
    func outsideState() throws -> [String] {
        var entries: [String] = []
        var info = stat()
        lstat(outside, &info)
        entries.append(". \(info.st_uid) \(String(info.st_mode, radix: 8))")
        for name in try FileManager.default.contentsOfDirectory(atPath: outside).sorted() {
            lstat(outside + "/" + name, &info)
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: outside + "/" + name))) ?? Data()
            entries.append("\(name) \(info.st_uid) \(String(info.st_mode, radix: 8)) \(bytes.base64EncodedString())")
        }
        return entries
    }

    @Test func aPlantedBackupsLinkIsRefusedAndNothingOutsideChanges() throws {
        let before = try outsideState()
        symlink(outside, dataDir + "/backups")
        let result = try run(["backup"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("backups is not a directory"), "\(result.stderr)")
        #expect(try outsideState() == before)
    }

    @Test func linksPlantedBesideTheDatabaseAreMovedAsLinksAndNeverFollowed() throws {
        let good = directory.file("good.db")
        let backup = try run(["backup", "--to", good])
        #expect(backup.status == 0, "\(backup.stderr)")
        let before = try outsideState()
        for (suffix, target) in [("-wal", "victim"), ("-shm", "secret"), ("-journal", "victim")] {
            unlink(dataDir + "/vault.db" + suffix)
            symlink(outside + "/" + target, dataDir + "/vault.db" + suffix)
        }
        let restored = try run(["restore", good])
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(try outsideState() == before)
        var info = stat()
        #expect(lstat(dataDir + "/vault.db", &info) == 0)
        #expect((info.st_mode & S_IFMT) == S_IFREG && info.st_uid == Self.serviceUser && info.st_mode & 0o777 == 0o600)
        #expect(try run(["verify"]).status == 0)
    }

    @Test func aCopySwappedForALinkDuringTheRestoreChangesNothingOutside() throws {
        let good = directory.file("good.db")
        #expect(try run(["backup", "--to", good]).status == 0)
        // A root-owned vault database outside: a restore that opened the swapped name would
        // open (and migrate, and give away) this one.
        try FileManager.default.copyItem(atPath: good, toPath: outside + "/other.db")
        let before = try outsideState()
        // The service account's side: whatever restore puts in the directory under a temporary
        // name is replaced by a link to the root-owned database, as fast as it appears.
        let stop = Latch()
        let swapper = Thread { [dataDir, outside] in
            var swaps = 0
            while !stop.isOpen {
                for name in (try? FileManager.default.contentsOfDirectory(atPath: dataDir)) ?? []
                where name.hasPrefix("vault.db.restoring-") {
                    var info = stat()
                    guard lstat(dataDir + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
                    let planted = dataDir + "/.planted-\(swaps)"
                    symlink(outside + "/other.db", planted)
                    if rename(planted, dataDir + "/" + name) == 0 { swaps += 1 } else { unlink(planted) }
                }
            }
        }
        swapper.start()
        defer { stop.open() }
        for _ in 0..<5 {
            let restored = try run(["restore", good])
            #expect(try outsideState() == before)
            // Either refused, or what is installed is the checked copy, never the planted link.
            var info = stat()
            #expect(
                restored.status != 0
                    || (lstat(dataDir + "/vault.db", &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG),
                "\(restored.stdout)")
        }
    }

    @Test func aLockFileLinkedToAnotherFileIsRefusedUntouched() throws {
        unlink(dataDir + "/vault.db.lock")
        link(outside + "/victim", dataDir + "/vault.db.lock")
        let before = try outsideState()
        let result = try run(["backup"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("not a regular file with a single link"), "\(result.stderr)")
        #expect(try outsideState() == before)
    }

    @Test func pathsIntoTheDataDirectoryGoOnlyThroughItsBackupsFolder() throws {
        let inside = try run(["backup", "--to", dataDir + "/elsewhere.db"])
        #expect(inside.status != 0 && inside.stderr.contains("inside the data directory"), "\(inside.stderr)")
        // A backups folder that is a link elsewhere is not read from by a restore either.
        let good = directory.file("good.db")
        #expect(try run(["backup", "--to", good]).status == 0)
        try FileManager.default.copyItem(atPath: good, toPath: outside + "/vault-planted.db")
        symlink(outside, dataDir + "/backups")
        let before = try outsideState()
        let restored = try run(["restore", dataDir + "/backups/vault-planted.db"])
        #expect(restored.status != 0 && restored.stderr.contains("backups is not a directory"), "\(restored.stderr)")
        #expect(try outsideState() == before)
    }

    @Test func aDataDirectoryGivenAsALinkIsFollowedOnce() throws {
        let linked = directory.file("linked-data")
        symlink(dataDir, linked)
        let result = try cli.run(["backup", "--data-dir", linked])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dataDir + "/backups").count == 1)
    }

    @Test func aForgedDaemonAnswerIsNotFollowedOutOfTheBackupsFolder() throws {
        let backups = dataDir + "/backups"
        mkdir(backups, 0o700)
        chown(backups, Self.serviceUser, Self.serviceUser)
        symlink(outside + "/victim", backups + "/vault-planted.db")
        let socket = dataDir + "/fake.sock"
        for (answer, target) in [
            (outside + "/victim", nil), (outside + "/victim", directory.file("stolen.db")),
            (backups + "/vault-planted.db", nil), (backups + "/vault-planted.db", directory.file("stolen.db")),
        ] as [(String, String?)] {
            let before = try outsideState()
            let daemon = try FakeDaemon(
                lock: dataDir + "/vault.db.lock", socket: socket, owner: Self.serviceUser, answer: answer,
                logs: directory)
            defer { daemon.stop() }
            let result = try run(["backup"] + (target.map { ["--to", $0] } ?? []))
            #expect(result.status != 0, "answer \(answer) was accepted: \(result.stdout)")
            #expect(try outsideState() == before, "answer \(answer)")
            #expect(target.map { !FileManager.default.fileExists(atPath: $0) } ?? true)
        }
    }
}

/// A stand-in for a daemon the service account runs: holds the vault's lock, names its socket
/// in the lock file and answers every request with a backup at `answer`.
private final class FakeDaemon {
    let process: SpawnedProcess
    let socket: String

    init(lock: String, socket: String, owner: uid_t, answer: String, logs: TemporaryDirectory) throws {
        self.socket = socket
        let script = logs.file("fake-daemon.py")
        try """
        import fcntl, json, os, socket, sys
        lock, path, owner, answer = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.write(fd, f"pid={os.getpid()}\\nrole=daemon\\nsocket={path}\\n".encode())
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        os.chown(path, owner, owner)
        server.listen(8)
        open(path + ".ready", "w").close()
        while True:
            connection, _ = server.accept()
            request = b""
            while b"\\r\\n\\r\\n" not in request:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                request += chunk
            body = json.dumps({"path": answer, "bytes": 17}).encode()
            connection.sendall(b"HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\ncontent-length: "
                + str(len(body)).encode() + b"\\r\\nconnection: close\\r\\n\\r\\n" + body)
            connection.close()
        """.write(toFile: script, atomically: true, encoding: .utf8)
        unlink(socket)
        unlink(socket + ".ready")
        process = try SpawnedProcess(
            executable: "/usr/bin/env", arguments: ["python3", script, lock, socket, String(owner), answer],
            environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"],
            stderr: logs.file("fake-daemon.log"))
        for _ in 0..<1000 where !FileManager.default.fileExists(atPath: socket + ".ready") { usleep(10_000) }
    }

    func stop() {
        process.signal(SIGKILL)
        process.waitUntilExit()
        unlink(socket)
        unlink(socket + ".ready")
    }
}
