import Synchronization

/// Metric series looked up in the Prometheus registry once per key: the registry's lookup formats
/// the help text on every call, which the per-request paths (routes, proxied calls, the fast
/// path's answers) cannot afford. Bounded: the keys come partly from callers (methods) and
/// reloads (provider instances), so past 1,024 the table starts again (the registry keeps the
/// series themselves, so no count is lost).
final class MetricSeries<Key: Hashable & Sendable, Series: Sendable>: Sendable {
    private let known = Mutex<[Key: Series]>([:])

    /// The series for `key`, made by `make` the first time.
    func series(_ key: Key, make: () -> Series) -> Series {
        known.withLock { known in
            if let found = known[key] { return found }
            let made = make()
            if known.count >= 1024 { known.removeAll() }
            known[key] = made
            return made
        }
    }
}
