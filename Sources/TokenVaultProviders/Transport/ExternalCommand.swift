import Foundation
import TokenVaultSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Runs an operator-configured program (ESIA's signer) with bytes on stdin and collects stdout
/// and stderr, within a deadline.
///
/// Written on `posix_spawn` rather than Foundation's `Process` for three reasons (and it closes
/// every inherited descriptor above 2 in the child, as `Process` does):
/// - the program gets its own process group, so a timeout kills what it started too (a shell
///   script's `sleep` would otherwise keep the output pipe open after the shell died);
/// - stdin is a socket written with `MSG_NOSIGNAL`, so a program that exits without reading
///   cannot kill the daemon with SIGPIPE (a pipe would, and ignoring SIGPIPE is process-wide);
///   stdout and stderr are sockets too;
/// - the wait is a `poll` loop with a deadline on a thread of its own, never on the Swift
///   concurrency pool or a NIO event loop.
struct ExternalCommand: Sendable {
    /// argv; `arguments[0]` is an absolute path (checked when the configuration is read).
    var arguments: [String]
    var timeoutSeconds: Double
    /// After the timeout: SIGTERM to the group, this long to exit, then SIGKILL.
    var gracePeriodSeconds: Double = 0.2
    /// Output beyond this is dropped (a signature is a few hundred bytes).
    static let maximumOutput = 64 * 1024

    enum Outcome: Sendable, Equatable {
        /// `status` is the exit code, or 128 + the signal when the program was killed by one.
        case exited(status: Int32, stdout: [UInt8], stderr: [UInt8])
        case timedOut(stderr: [UInt8])
        /// It could not be started (`errno` text).
        case failedToStart(String)
    }

    func run(input: [UInt8]) async -> Outcome {
        await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: runBlocking(input: input)) }
            thread.name = "tokenvault-external-command"
            thread.start()
        }
    }

    func runBlocking(input: [UInt8]) -> Outcome {
        // Socket pairs rather than pipes: created close-on-exec atomically (`pipe2` is not
        // imported), so a program started concurrently never inherits our ends.
        var stdinPair: [Int32] = [-1, -1]
        var stdoutPair: [Int32] = [-1, -1]
        var stderrPair: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &stdinPair) == 0 else {
            return .failedToStart(Self.errnoText("socketpair"))
        }
        guard socketpair(AF_UNIX, type, 0, &stdoutPair) == 0 else {
            closeAll(stdinPair)
            return .failedToStart(Self.errnoText("socketpair"))
        }
        guard socketpair(AF_UNIX, type, 0, &stderrPair) == 0 else {
            closeAll(stdinPair + stdoutPair)
            return .failedToStart(Self.errnoText("socketpair"))
        }

        let spawned = spawn(stdin: stdinPair[1], stdout: stdoutPair[1], stderr: stderrPair[1])
        closeAll([stdinPair[1], stdoutPair[1], stderrPair[1]])
        guard case .success(let pid) = spawned else {
            closeAll([stdinPair[0], stdoutPair[0], stderrPair[0]])
            if case .failure(let message) = spawned { return .failedToStart(message.text) }
            return .failedToStart("spawn failed")
        }

        // The input is small. A program that exits without reading it gives EPIPE (no signal);
        // one that neither reads nor exits holds the send up to the timeout at most.
        let deadline = Self.now() + timeoutSeconds
        var limit = timeval(
            tv_sec: Int(timeoutSeconds), tv_usec: Int((timeoutSeconds - timeoutSeconds.rounded(.down)) * 1e6))
        setsockopt(stdinPair[0], SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        input.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let sent = send(stdinPair[0], bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if sent < 0, errno == EINTR { continue }
                if sent <= 0 { break }
                offset += sent
            }
        }
        close(stdinPair[0])

        var collector = OutputCollector(stdout: stdoutPair[0], stderr: stderrPair[0])
        defer { collector.closeAll() }
        var status: Int32 = 0
        while true {
            if waitpid(pid, &status, WNOHANG) == pid {
                collector.drain(until: Self.now() + 0.05)
                return .exited(status: Self.exitCode(status), stdout: collector.stdout, stderr: collector.stderr)
            }
            let remaining = deadline - Self.now()
            if remaining <= 0 { break }
            collector.poll(milliseconds: Int32(min(remaining, 0.05) * 1000) + 1)
        }
        // SIGTERM to the group, a grace period, then SIGKILL to what is left of the group (what
        // the program started too: a script's `sleep` would otherwise hold the output open). The
        // leader is only reaped after that, so the group id cannot have been reused meanwhile.
        kill(-pid, SIGTERM)
        let graceEnds = Self.now() + gracePeriodSeconds
        while Self.now() < graceEnds, !Self.hasExited(pid) { collector.poll(milliseconds: 10) }
        kill(-pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
        return .timedOut(stderr: collector.stderr)
    }

    /// Starts the program in a process group of its own with the three descriptors as 0, 1, 2.
    private func spawn(stdin: Int32, stdout: Int32, stderr: Int32) -> Result<pid_t, SpawnError> {
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        // SwiftNIO's sockets are not close-on-exec: without this the signer would inherit the
        // daemon's listening socket and open connections (and keep them alive after we close them).
        SpawnActions.closeDescriptors(from: 3, &actions)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        var noMask = sigset_t()
        sigemptyset(&noMask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &noMask)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, &attributes, &argv, environ)
        guard result == 0 else { return .failure(SpawnError(text: String(cString: strerror(result)))) }
        return .success(pid)
    }

    private struct SpawnError: Error { var text: String }

    /// `posix_spawn_file_actions_addclosefrom_np(3)` (glibc 2.34+, looked up at run time: the
    /// Swift Glibc module does not export it); else a close action for every descriptor open
    /// now (a failed close of one closed meanwhile is ignored by posix_spawn).
    private func closeAll(_ descriptors: [Int32]) {
        for descriptor in descriptors where descriptor >= 0 { close(descriptor) }
    }

    /// Whether the child has exited, without reaping it (`WNOWAIT`).
    private static func hasExited(_ pid: pid_t) -> Bool {
        var info = siginfo_t()
        return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_signo == SIGCHLD
    }

    /// `WEXITSTATUS`, or 128 + `WTERMSIG` as a shell reports it (the C macros are not imported).
    static func exitCode(_ status: Int32) -> Int32 {
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }

    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func errnoText(_ call: String) -> String { "\(call): \(String(cString: strerror(errno)))" }
}

/// Reads a child's stdout and stderr as they come, so neither pipe fills and blocks it.
private struct OutputCollector {
    private var descriptors: [Int32]
    private(set) var stdout: [UInt8] = []
    private(set) var stderr: [UInt8] = []

    init(stdout: Int32, stderr: Int32) { descriptors = [stdout, stderr] }

    /// Waits up to `milliseconds` for output and reads what there is.
    mutating func poll(milliseconds: Int32) {
        var fds = descriptors.filter { $0 >= 0 }.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        guard !fds.isEmpty else {
            usleep(UInt32(max(0, milliseconds)) * 1000)
            return
        }
        guard Glibc.poll(&fds, nfds_t(fds.count), milliseconds) > 0 else { return }
        for entry in fds where entry.revents != 0 { read(entry.fd) }
    }

    /// Reads until both pipes are closed or `deadline` passes (the program has exited; a child
    /// it left behind may still hold a pipe open).
    mutating func drain(until deadline: Double) {
        while descriptors.contains(where: { $0 >= 0 }), ExternalCommand.now() < deadline { poll(milliseconds: 10) }
    }

    private mutating func read(_ descriptor: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress!, $0.count) }
        if count < 0, errno == EINTR || errno == EAGAIN { return }
        guard count > 0 else {
            close(descriptor)
            descriptors = descriptors.map { $0 == descriptor ? -1 : $0 }
            return
        }
        if descriptor == descriptors[0] {
            if stdout.count < ExternalCommand.maximumOutput { stdout += buffer[0..<count] }
        } else if stderr.count < ExternalCommand.maximumOutput {
            stderr += buffer[0..<count]
        }
    }

    mutating func closeAll() {
        for descriptor in descriptors where descriptor >= 0 { close(descriptor) }
        descriptors = [-1, -1]
    }
}
