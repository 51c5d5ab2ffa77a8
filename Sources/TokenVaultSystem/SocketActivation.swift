import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The listening socket systemd passes a socket-activated service (`sd_listen_fds(3)`):
/// `LISTEN_PID` names this process, `LISTEN_FDS` counts descriptors from 3 on. TokenVault listens
/// on one Unix stream socket, so exactly one is accepted. Mode, owner and group are the socket
/// unit's (`SocketMode=`, `SocketGroup=`); the daemon leaves them, and the file, alone.
public struct SocketActivation: Sendable, Equatable {
    /// The first passed descriptor, by the protocol's definition.
    public static let firstDescriptor: CInt = 3

    public let descriptor: CInt
    /// The path the socket is bound to (for messages and the lock file).
    public let path: String

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The passed socket, `nil` when the daemon was not socket-activated. The variables are
    /// removed and the descriptor marked close-on-exec, so child processes inherit neither.
    public static func take(from environment: [String: String]) throws(Failure) -> SocketActivation? {
        guard let pid = environment["LISTEN_PID"], let count = environment["LISTEN_FDS"] else { return nil }
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
        guard pid_t(pid) == getpid() else { return nil }
        guard count == "1" else {
            throw Failure(
                description: "socket activation passed \(count) sockets; give tokenvault.socket one ListenStream=")
        }
        let descriptor = firstDescriptor
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        var type: CInt = 0
        var listening: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_TYPE, &type, &length) == 0,
            type == CInt(SOCK_STREAM.rawValue),
            getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0, listening == 1
        else {
            throw Failure(description: "the socket systemd passed (fd 3) is not a listening stream socket")
        }
        var address = sockaddr_un()
        var addressLength = socklen_t(MemoryLayout<sockaddr_un>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &addressLength) }
        }
        guard named == 0, address.sun_family == sa_family_t(AF_UNIX) else {
            throw Failure(description: "the socket systemd passed (fd 3) is not a Unix socket; use ListenStream=/path")
        }
        let path = withUnsafeBytes(of: &address.sun_path) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        return SocketActivation(descriptor: descriptor, path: path)
    }
}
