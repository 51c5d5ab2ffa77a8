#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// CLOCK_MONOTONIC in nanoseconds.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// This process's user + system CPU time, in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    #if canImport(Glibc)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
        getrusage(RUSAGE_SELF, &usage)
    #endif
    func seconds(_ value: timeval) -> Double { Double(value.tv_sec) + Double(value.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// `value` with a fixed number of decimals, without Foundation's `String(format:)`.
func format(_ value: Double, decimals: Int) -> String {
    guard value.isFinite else { return "\(value)" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    let whole = Int(scaled / scale)
    let sign = value < 0 && scaled != 0 ? "-" : ""
    guard decimals > 0 else { return sign + String(whole) }
    let fraction = String(Int(scaled - Double(whole) * scale))
    return sign + String(whole) + "." + String(repeating: "0", count: decimals - fraction.count) + fraction
}
