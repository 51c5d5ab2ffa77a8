import CProcess

#if canImport(Glibc)
    import Glibc
#endif

/// A helper process of ours (the courier), started with `posix_spawn` from this very binary,
/// talking to us over a socketpair, in a process group of its own so that a signal meant for
/// the daemon's group (a terminal's Ctrl-C) does not reach it.
public final class ChildProcess: Sendable {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public let pid: pid_t
    /// Our end of the socketpair (close-on-exec: no other child inherits it).
    public let descriptor: Int32

    private init(pid: pid_t, descriptor: Int32) {
        self.pid = pid
        self.descriptor = descriptor
    }

    /// Starts this binary (`/proc/self/exe`) with `arguments` and exactly `environment`
    /// (`NAME=value` entries); the child's end of a new socketpair is its descriptor 3, and it
    /// inherits no other descriptor of ours beyond standard output and errors. Standard input is
    /// /dev/null.
    public static func spawnSelf(arguments: [String], environment: [String]) throws(Failure) -> ChildProcess {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw Failure(description: "socketpair: \(String(cString: strerror(errno)))")
        }
        defer { close(pair[1]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // dup2 clears close-on-exec on the child's copy.
        posix_spawn_file_actions_adddup2(&actions, pair[1], 3)
        // Nothing else of ours (see SpawnActions).
        SpawnActions.closeDescriptors(from: 4, &actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let executable = "/proc/self/exe"
        let argv = ([CommandLine.arguments.first ?? "tokenvault"] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let envp = environment.map { strdup($0) } + [nil]
        defer { for entry in envp { free(entry) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            close(pair[0])
            throw Failure(
                description: "cannot start \(arguments.first ?? "the helper"): \(String(cString: strerror(result)))")
        }
        return ChildProcess(pid: pid, descriptor: pair[0])
    }

    /// Waits for the process to end; its exit status, or 128 + the signal that ended it.
    public func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return -1 }
        }
        let signalled = status & 0x7F
        return signalled == 0 ? (status >> 8) & 0xFF : 128 + signalled
    }

    public func signal(_ number: Int32) { kill(pid, number) }

}
