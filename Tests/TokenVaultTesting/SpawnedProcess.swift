import Foundation
import Synchronization
import TokenVaultSystem

#if canImport(Glibc)
    import Glibc
#endif

/// A child process started with `posix_spawn`, for the tests' daemons and commands, with the
/// names of Foundation's `Process` that the tests use. Not `Process` itself: in the
/// swift-corelibs-foundation of Swift 6.3.1, `Process.run()` lists /proc/self/fd copying whole
/// 256-byte `d_name` fields and can read past the end of readdir's buffer, which intermittently
/// crashes the test process (SIGSEGV in memcpy; swift-corelibs-foundation#5472, fixed upstream
/// since). A fresh clone's CI hit it in `DaemonProcess`. The child gets only its three standard
/// descriptors: the test process holds many sockets that are not close-on-exec.
public final class SpawnedProcess: Sendable {
    public let processIdentifier: pid_t
    private let status = Mutex<Int32?>(nil)

    /// `stdin`, `stdout`, `stderr`: files to open as the child's descriptors 0, 1 and 2 (nil:
    /// /dev/null); output files are appended to.
    public init(
        executable: String, arguments: [String], environment: [String: String], stdin: String? = nil,
        stdout: String? = nil, stderr: String? = nil
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin ?? "/dev/null", O_RDONLY, 0)
        for (descriptor, path) in [(Int32(1), stdout), (2, stderr)] {
            posix_spawn_file_actions_addopen(
                &actions, descriptor, path ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o600)
        }
        SpawnActions.closeDescriptors(from: 3, &actions)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard result == 0 else {
            throw SocketTestError("posix_spawn \(executable): \(String(cString: strerror(result)))")
        }
        processIdentifier = pid
    }

    public var isRunning: Bool { reap(blocking: false) == nil }

    /// The exit code, or the number of the signal that ended it (as `Process` reports it).
    public var terminationStatus: Int32 { waitUntilExit() }

    @discardableResult
    public func waitUntilExit() -> Int32 {
        reap(blocking: true) ?? -1
    }

    /// SIGTERM.
    public func terminate() { signal(SIGTERM) }

    public func signal(_ number: Int32) {
        if isRunning { kill(processIdentifier, number) }
    }

    private func reap(blocking: Bool) -> Int32? {
        status.withLock { status in
            if let status { return status }
            var raw: Int32 = 0
            var result: pid_t
            repeat {
                result = waitpid(processIdentifier, &raw, blocking ? 0 : WNOHANG)
            } while result < 0 && errno == EINTR
            guard result == processIdentifier else { return nil }
            let signal = raw & 0x7f
            status = signal == 0 ? (raw >> 8) & 0xff : signal
            return status
        }
    }

    deinit {
        if reap(blocking: false) == nil {
            kill(processIdentifier, SIGKILL)
            _ = reap(blocking: true)
        }
    }
}
