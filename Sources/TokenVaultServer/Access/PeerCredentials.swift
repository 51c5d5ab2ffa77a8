import NIOCore
import Synchronization
import TokenVaultCore

#if canImport(Glibc)
    import Glibc
#endif

/// Who is on the other end of a Unix socket connection, as the kernel says (`SO_PEERCRED`):
/// the credentials the peer had when it connected. Nothing the client sends can change them.
public struct PeerCredentials: Sendable, Equatable, CustomStringConvertible {
    public let uid: UInt32
    public let gid: UInt32
    public let pid: Int32

    public init(uid: UInt32, gid: UInt32, pid: Int32) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
    }

    public var description: String { "uid=\(uid) gid=\(gid) pid=\(pid)" }

    /// The peer of `channel`, as `PeerCredentialsHandler` read it when the connection started.
    public static func of(_ channel: any Channel) throws -> PeerCredentials {
        guard let peer = PeerCredentialsHandler.peer(of: channel) else {
            throw VaultError(code: .peerUnknown, message: "the connection does not expose peer credentials")
        }
        return peer
    }

    /// Reads `SO_PEERCRED` on the channel's own event loop, where the socket option is read at
    /// once; nil if the channel has none. Only `PeerCredentialsHandler` calls it.
    static func readNow(from channel: any Channel) -> PeerCredentials? {
        var peer: PeerCredentials?
        peerCredentialOption(channel)?.assumeIsolated().whenSuccess { peer = PeerCredentials($0) }
        return peer
    }

    private init(_ value: PeerCredentialsValue) {
        self.init(uid: value.uid, gid: value.gid, pid: value.pid)
    }

    private static func peerCredentialOption(_ channel: any Channel) -> EventLoopFuture<PeerCredentialsValue>? {
        (channel as? any SocketOptionProvider)?.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
    }
}

/// The kernel's `struct ucred` (pid, uid, gid), declared here because Glibc exposes it only
/// under `_GNU_SOURCE`. Same layout: three 32-bit integers.
struct PeerCredentialsValue: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}
