import CProcess

#if canImport(Glibc)
    import Glibc
#endif

/// What the daemon does to its own process before it holds any secret: no core files (a crash
/// would write tokens to disk) and not dumpable (other processes of its user cannot attach to it
/// or read its memory through /proc).
public enum ProcessHygiene {
    /// Sets `RLIMIT_CORE` to 0 and `PR_SET_DUMPABLE` to 0. Returns what failed, if anything.
    @discardableResult
    public static func disableCoreDumps() -> [String] {
        var problems: [String] = []
        var none = rlimit(rlim_cur: 0, rlim_max: 0)
        if setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &none) != 0 {
            problems.append("setrlimit(RLIMIT_CORE): \(String(cString: strerror(errno)))")
        }
        if tokenvault_set_dumpable(0) != 0 {
            problems.append("prctl(PR_SET_DUMPABLE): \(String(cString: strerror(errno)))")
        }
        return problems
    }

    /// Whether the process is dumpable (for tests and the start-up log).
    public static var isDumpable: Bool { tokenvault_is_dumpable() == 1 }

    /// The soft `RLIMIT_CORE` in bytes (`rlim_t.max` when unlimited).
    public static var coreLimit: UInt64 {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit)
        return UInt64(limit.rlim_cur)
    }
}
