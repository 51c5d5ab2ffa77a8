import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The `Date` header value (IMF-fixdate, RFC 9110 §5.6.7) of responses the fast path writes
/// itself (the router's responses get theirs from Hummingbird), formatted once per second.
enum HTTPDateHeader {
    private static let cache = Mutex<(second: Int, text: String)>((-1, ""))

    static var now: String {
        var clock = timespec()
        clock_gettime(CLOCK_REALTIME, &clock)
        let second = clock.tv_sec
        return cache.withLock { cached in
            if cached.second != second { cached = (second, format(second)) }
            return cached.text
        }
    }

    static func format(_ secondsSinceEpoch: Int) -> String {
        var time = time_t(secondsSinceEpoch)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
