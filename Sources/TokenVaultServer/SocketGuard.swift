import Foundation
import TokenVaultCore

#if canImport(Glibc)
    import Glibc
#endif

/// Prepares the socket path before the server binds and tidies up after it stops.
///
/// - the parent directory is created 0750 when missing;
/// - a socket file that answers a connect is a live daemon: refuse; one that does not is stale:
///   remove it; anything that is not a socket is never removed;
/// - the caller runs under umask 077, so the socket is born 0600; `applyPermissions` then opens
///   it to the configured mode and group, never to others.
public enum SocketGuard {
    public static func prepare(path: String) throws {
        guard path.utf8.count < 108 else {
            throw VaultError(code: .socketError, message: "socket path \(path) is longer than 107 bytes")
        }
        let parent = directory(of: path)
        if !FileManager.default.fileExists(atPath: parent) {
            try FileManager.default.createDirectory(
                atPath: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o750])
        }
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard (info.st_mode & S_IFMT) == S_IFSOCK else {
            throw VaultError(
                code: .socketError, message: "\(path) exists and is not a socket; refusing to replace it")
        }
        if isListening(path) {
            throw VaultError(
                code: .daemonRunning, message: "another daemon is already listening on \(path)")
        }
        guard unlink(path) == 0 else {
            throw VaultError(
                code: .socketError,
                message: "cannot remove stale socket \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// The directory the socket is in: "." for a bare name (`--socket tokenvault.sock`), which
    /// `deletingLastPathComponent` gives as "", a path no directory call accepts.
    static func directory(of path: String) -> String {
        let parent = (path as NSString).deletingLastPathComponent
        return parent.isEmpty ? "." : parent
    }

    /// Whether something accepts connections on the socket at `path`.
    public static func isListening(_ path: String) -> Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            path.utf8CString.withUnsafeBytes {
                raw.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(raw.count)))
            }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    /// Gives the bound socket its configured mode and group.
    public static func applyPermissions(path: String, mode: mode_t, group: String?) throws {
        if let group {
            guard let gid = gid_t(group) ?? getgrnam(group).map({ $0.pointee.gr_gid }) else {
                throw VaultError(code: .socketError, message: "socket group '\(group)' does not exist")
            }
            // The socket and its directory both belong to the group, or its members cannot reach it.
            let parent = directory(of: path)
            guard chown(path, uid_t.max, gid) == 0, chown(parent, uid_t.max, gid) == 0 else {
                throw VaultError(
                    code: .socketError,
                    message: "cannot give \(path) to group \(group): \(String(cString: strerror(errno)))")
            }
        }
        guard chmod(path, mode & 0o770) == 0 else {
            throw VaultError(
                code: .socketError, message: "cannot chmod \(path): \(String(cString: strerror(errno)))")
        }
    }

    public static func remove(path: String) {
        var info = stat()
        if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK { unlink(path) }
    }
}
