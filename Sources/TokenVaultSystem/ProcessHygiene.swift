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

    /// Arenas glibc's malloc may keep, unless `MALLOC_ARENA_MAX` is set. By default each of up to
    /// 8 threads per core that contends for malloc gets an arena of its own, and what a thread
    /// frees stays in its arena: 100 proxied calls streaming 10 MiB at once took the daemon 120
    /// MiB above idle with the default and 54 MiB with two (docs/benchmarks.md). Returns what
    /// failed, if anything.
    public static func limitMallocArenas(to count: Int32, environment: [String: String]) -> String? {
        guard environment["MALLOC_ARENA_MAX"] == nil else { return nil }
        return tokenvault_limit_malloc_arenas(count) == 1 ? nil : "mallopt(M_ARENA_MAX, \(count)) failed"
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
