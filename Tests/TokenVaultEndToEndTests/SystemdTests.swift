import Foundation
import Synchronization
import Testing
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// The built daemon under the service manager's protocols: socket activation (`LISTEN_FDS`) and
/// notification (`NOTIFY_SOCKET`: ready, watchdog, reload, stopping), each played by the test.
@Suite(.serialized) struct SystemdTests {
    let directory = TemporaryDirectory("tokenvault-systemd")
    let cli = CommandRunner()
    var dataDir: String { directory.file("data") }
    var socket: String { directory.file("activated.sock") }

    init() throws {
        _ = try cli.run(["init", "--data-dir", dataDir])
    }

    @Test func daemonServesOnASocketItWasHandedBySystemdSocketActivate() async throws {
        guard let activate = Self.which("systemd-socket-activate") else {
            print("skipped: systemd-socket-activate is not installed")
            return
        }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TOKENVAULT_") }
        environment["TOKENVAULT_DATA_DIR"] = dataDir
        let log = directory.file("activated.log")
        let process = try SpawnedProcess(
            executable: activate,
            arguments: ["-l", socket, "-E", "TOKENVAULT_DATA_DIR", cli.executable, "serve"],
            environment: environment, stdout: log, stderr: log)
        defer {
            process.signal(SIGKILL)
            _ = process.waitUntilExit()
        }
        let socket = socket
        #expect(try await waitUntil(within: 10) { FileManager.default.fileExists(atPath: socket) })
        // The first connection starts the daemon, which takes over the listening socket.
        let health = try UnixSocketHTTP.request(socket, "GET", "/v1/health")
        #expect(health.status == 200)
        #expect(health.json()["status"] as? String == "ok")
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(output.contains("listening on \(socket)"), "\(output)")
        process.terminate()
        #expect(process.waitUntilExit() == 0)
        var info = stat()
        #expect(lstat(socket, &info) == 0, "the socket unit's file is left for systemd to remove")
    }

    @Test func readyWatchdogReloadingAndStoppingReachTheNotifySocket() throws {
        let listener = try NotifyListener(path: directory.file("notify.sock"))
        defer { listener.stop() }
        let runSocket = directory.file("run/tokenvault.sock")
        let daemon = try DaemonProcess(
            arguments: ["--data-dir", dataDir], socketPath: runSocket, logDirectory: directory.path,
            environment: ["NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "2000000"])
        let ready = try listener.wait(for: "READY=1", timeout: 10)
        #expect(ready.text.contains("STATUS=serving 0 credentials"), "\(ready.text)")
        #expect(try UnixSocketHTTP.request(runSocket, "GET", "/v1/health").status == 200)

        // Pings at least every interval (2 s; the daemon's loops stamp every quarter of it and it
        // pings within half, so a loaded machine may stall it by a second) for five seconds.
        Thread.sleep(forTimeInterval: 5)
        let pings = listener.received.filter { $0.text == "WATCHDOG=1" }.map(\.at)
        #expect(pings.count >= 3, "\(listener.received.map(\.text))")
        let gaps = zip(pings.dropFirst(), pings).map { $0 - $1 }
        #expect((gaps.max() ?? 0) < 2.0, "a ping within each watchdog interval: gaps \(gaps)")

        daemon.process.signal(SIGHUP)
        let reloading = try listener.wait(for: "RELOADING=1", timeout: 10)
        #expect(reloading.text.contains("MONOTONIC_USEC="))
        let readyAgain = try listener.wait(for: "READY=1", after: reloading.at, timeout: 10)
        #expect(readyAgain.at >= reloading.at)
        #expect(daemon.process.isRunning, "SIGHUP reloads, it does not stop the daemon")
        #expect(try UnixSocketHTTP.request(runSocket, "GET", "/v1/health").status == 200)

        daemon.process.signal(SIGTERM)
        _ = try listener.wait(for: "STOPPING=1", timeout: 10)
        #expect(daemon.process.waitUntilExit() == 0)
        #expect(daemon.log.contains("configuration reloaded"), "\(daemon.log)")
    }

    static func which(_ name: String) -> String? {
        for directory in ["/usr/bin", "/bin", "/usr/sbin", "/usr/local/bin"] {
            let path = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }
}

/// Plays the service manager's end of `NOTIFY_SOCKET`: a datagram socket whose messages are
/// collected, with the time each arrived, by a background thread.
final class NotifyListener: Sendable {
    struct Message: Sendable {
        let text: String
        let at: Double
    }

    let path: String
    private let descriptor: Int32
    private let stopped = Atomic(false)
    private let messages = Mutex<[Message]>([])
    private let started = Date()

    init(path: String) throws {
        self.path = path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw SocketTestError("socket: \(errno)") }
        let bound = withUnixSocketAddress(path) { address, length in bind(descriptor, address, length) }
        guard bound == 0 else { throw SocketTestError("bind \(path): \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let thread = Thread { [self] in receive() }
        thread.start()
    }

    /// Ends the receiving thread, which closes the socket.
    func stop() { stopped.store(true, ordering: .relaxed) }

    var received: [Message] { messages.withLock { $0 } }

    private func receive() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        defer { close(descriptor) }
        while !stopped.load(ordering: .relaxed) {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { continue }
            let message = Message(
                text: String(decoding: buffer[..<count], as: UTF8.self), at: Date().timeIntervalSince(started))
            messages.withLock { $0.append(message) }
        }
    }

    /// The first message holding `line` that arrived after `after` seconds.
    func wait(for line: String, after: Double = -1, timeout: Double) throws -> Message {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let found = received.first(where: {
                $0.at > after && $0.text.split(separator: "\n").contains(Substring(line))
            }) {
                return found
            }
            usleep(20_000)
        }
        throw SocketTestError("no \(line) within \(timeout) s; received \(received.map(\.text))")
    }
}
