import TokenVaultCore
import TokenVaultSystem

#if canImport(Glibc)
    import Glibc
#endif

/// One process at a time changes a vault's keys or serves it: an exclusive `flock` on
/// `<database>.lock`, held for the holder's life. The daemon holds it while it runs; `rekey` and
/// `rotate-key` hold it while they work, so a daemon cannot start under them and they cannot run
/// under a daemon (where they would change keys behind its back). The file names the holder (pid,
/// what it is, the daemon's socket), so a refusal can say who holds it and where to reach it.
public final class DatabaseLock: Sendable {
    /// Who holds a lock, as its file says.
    public struct Holder: Sendable, Equatable, CustomStringConvertible {
        public var pid: Int32?
        /// `daemon`, or the command holding it (`rekey`, `rotate-key`).
        public var role: String
        /// The daemon's socket, when the holder is a daemon.
        public var socket: String?

        public var description: String {
            let who = role == "daemon" ? "a tokenvault daemon" : "tokenvault \(role)"
            return who + (pid.map { " (pid \($0))" } ?? "") + (socket.map { " serving \($0)" } ?? "")
        }

        /// Parses `pid=…`, `role=…`, `socket=…` lines; a file from an older daemon holds just the pid.
        init(fileContents text: String) {
            var fields: [String: String] = [:]
            for line in text.split(separator: "\n") {
                guard let equals = line.firstIndex(of: "=") else {
                    fields["pid"] = String(line)
                    continue
                }
                fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
            }
            pid = fields["pid"].flatMap { Int32($0.trimmingCharacters(in: .whitespaces)) }
            role = fields["role"] ?? "daemon"
            socket = fields["socket"].flatMap { $0.isEmpty ? nil : $0 }
        }
    }

    private let lock: FileLock

    /// Takes the lock, or throws `daemon_running` naming the holder.
    public init(databasePath: String, role: String = "daemon", socket: String? = nil) throws {
        let path = databasePath + ".lock"
        let taken: FileLock?
        do {
            taken = try FileLock.exclusive(path, wait: false)
        } catch {
            throw VaultError(code: .lockError, message: error.description)
        }
        guard let taken else {
            let holder = Self.holder(databasePath: databasePath) ?? Holder(fileContents: "")
            throw VaultError(code: .daemonRunning, message: "\(holder) already holds \(databasePath)")
        }
        lock = taken
        let text = Array("pid=\(getpid())\nrole=\(role)\nsocket=\(socket ?? "")\n".utf8)
        _ = ftruncate(lock.descriptor, 0)
        _ = pwrite(lock.descriptor, text, text.count, 0)
    }

    /// A lock file a command run as root created in another user's data directory is given to
    /// that directory's owner (or the daemon could not open it), through the descriptor it holds.
    public func giveToOwner(of directory: HeldDirectory) throws {
        guard geteuid() == 0, directory.owner != 0 else { return }
        guard fchown(lock.descriptor, directory.owner, directory.group) == 0 else {
            throw VaultError.storage(
                "cannot give the lock file to uid \(directory.owner): \(String(cString: strerror(errno)))")
        }
    }

    /// Who holds the lock of `databasePath` right now, or nil if nobody does (the lock is not
    /// taken: a holder found here may let go a moment later).
    public static func holder(databasePath: String) -> Holder? {
        let path = databasePath + ".lock"
        guard FileLock.isHeld(path) else { return nil }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        guard FileLock.isPlainFile(descriptor) else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        return Holder(fileContents: count > 0 ? String(decoding: buffer.prefix(count), as: UTF8.self) : "")
    }
}
