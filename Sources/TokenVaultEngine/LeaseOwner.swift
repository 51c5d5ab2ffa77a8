import Foundation

/// Names this process in the refresh journal's leases (`host:pid:nonce:node`) and tells whether
/// another owner is certainly gone, so an attempt interrupted by a crash is resumed at once
/// instead of waiting for its lease to run out.
///
/// "Certainly gone" means more than a dead pid: a daemon's provider calls are made by its
/// courier, which outlives it and may still deliver the answer. Only a later daemon of the same
/// node (the same data directory) waits for that courier before it resumes anything, so only an
/// earlier incarnation of this node is presumed gone. Another node's lease, on this host or
/// another, runs out first (several daemons on one PostgreSQL vault).
struct LeaseOwner: Sendable {
    let id: String
    private let host: String
    private let pid: Int32
    private let node: String

    /// `node` names the daemon's data directory (hashed: it never appears in the journal);
    /// `host` stands in for the host name in tests that play two processes in one.
    init(host: String = ProcessInfo.processInfo.hostName, node: String = "") {
        self.host = host
        pid = getpid()
        self.node = Self.digest(node)
        let nonce = UInt32.random(in: .min ... .max)
        id = "\(host):\(pid):\(String(nonce, radix: 16)):\(self.node)"
    }

    /// True only when `owner` was an earlier daemon of this node on this host (its process is
    /// gone), or an earlier incarnation of this pid. Leases written before owners named their
    /// node (`host:pid:nonce`) are judged by host and pid alone, as they were.
    func isGone(_ owner: String) -> Bool {
        let parts = owner.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3 || parts.count == 4, String(parts[0]) == host, let ownerPID = Int32(parts[1]) else {
            return false
        }
        if parts.count == 4, String(parts[3]) != node { return false }
        if ownerPID == pid { return owner != id }
        return kill(ownerPID, 0) != 0 && errno == ESRCH
    }

    /// FNV-1a, 64 bits, in hex: stable across processes (Swift's `Hasher` is seeded per process).
    static func digest(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return String(hash, radix: 16)
    }
}
