import Foundation

/// Names this process in the refresh journal's leases (`host:pid:nonce`) and tells whether
/// another owner is certainly gone, so an attempt interrupted by a crash is resumed at once
/// instead of waiting for its lease to run out.
struct LeaseOwner: Sendable {
    let id: String
    private let host: String
    private let pid: Int32

    /// `host` stands in for the host name in tests that play two processes in one.
    init(host: String = ProcessInfo.processInfo.hostName) {
        self.host = host
        pid = getpid()
        let nonce = UInt32.random(in: .min ... .max)
        id = "\(host):\(pid):\(String(nonce, radix: 16))"
    }

    /// True only when `owner` was a process on this host that no longer exists, or an earlier
    /// incarnation of this pid. Another host's owner is never presumed dead: its lease expires.
    func isGone(_ owner: String) -> Bool {
        let parts = owner.split(separator: ":")
        guard parts.count == 3, String(parts[0]) == host, let ownerPID = Int32(parts[1]) else { return false }
        if ownerPID == pid { return owner != id }
        return kill(ownerPID, 0) != 0 && errno == ESRCH
    }
}
