import Synchronization

/// Counts open connections and streams, over all callers and per uid, and says whether one more
/// may open (`limits.max_connections`, `limits.max_connections_per_uid`,
/// `limits.max_streams_per_uid`). A caller who opens thousands of idle connections or streams
/// exhausts its own allowance, not the daemon's descriptors, and other users are still served.
final class ConnectionLimiter: Sendable {
    private struct Counts {
        var connections = 0
        var connectionsByUID: [UInt32: Int] = [:]
        var streamsByUID: [UInt32: Int] = [:]
        var proxyCallsByUID: [UInt32: Int] = [:]
    }

    private let limits: ConnectionLimits
    private let counts = Mutex(Counts())

    init(limits: ConnectionLimits) { self.limits = limits }

    /// Takes a connection slot for `uid`; false (nothing taken) when either cap is reached.
    func admitConnection(uid: UInt32) -> Bool {
        counts.withLock { counts in
            guard counts.connections < limits.maximum, counts.connectionsByUID[uid, default: 0] < limits.maximumPerUID
            else { return false }
            counts.connections += 1
            counts.connectionsByUID[uid, default: 0] += 1
            return true
        }
    }

    func releaseConnection(uid: UInt32) {
        counts.withLock { counts in
            counts.connections = max(0, counts.connections - 1)
            Self.decrement(&counts.connectionsByUID, uid)
        }
    }

    /// Takes a stream slot for `uid`; false when the uid has `maximumStreamsPerUID` open.
    func admitStream(uid: UInt32) -> Bool { admit(\.streamsByUID, uid: uid, limit: limits.maximumStreamsPerUID) }

    func releaseStream(uid: UInt32) { counts.withLock { Self.decrement(&$0.streamsByUID, uid) } }

    /// Takes a proxied-call slot for `uid`; false when the uid has `maximumProxyCallsPerUID` in flight.
    func admitProxyCall(uid: UInt32) -> Bool {
        admit(\.proxyCallsByUID, uid: uid, limit: limits.maximumProxyCallsPerUID)
    }

    func releaseProxyCall(uid: UInt32) { counts.withLock { Self.decrement(&$0.proxyCallsByUID, uid) } }

    /// Open connections and streams (metrics).
    var snapshot: (connections: Int, streams: Int) {
        counts.withLock { ($0.connections, $0.streamsByUID.values.reduce(0, +)) }
    }

    /// Takes one of `uid`'s `limit` slots counted in `table`; false (nothing taken) when all are taken.
    private func admit(_ table: WritableKeyPath<Counts, [UInt32: Int]>, uid: UInt32, limit: Int) -> Bool {
        counts.withLock { counts in
            guard counts[keyPath: table][uid, default: 0] < limit else { return false }
            counts[keyPath: table][uid, default: 0] += 1
            return true
        }
    }

    private static func decrement(_ counts: inout [UInt32: Int], _ uid: UInt32) {
        guard let count = counts[uid] else { return }
        counts[uid] = count > 1 ? count - 1 : nil
    }
}
