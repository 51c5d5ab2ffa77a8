#if canImport(Glibc)
    import Glibc
#endif

/// An exclusive `flock` on a file, held until the object goes away (or the process ends: the
/// kernel releases it even after a SIGKILL). The vault's database lock and the courier's spool
/// lock are both this.
public final class FileLock: Sendable {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// The lock file, open (read-write) for as long as the lock is held.
    public let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    /// Takes the lock on `path` (created 0600 if missing); nil when another process holds it and
    /// `wait` is false. With `wait`, blocks until the holder lets go. The file must be a regular
    /// file with one link: a lock file is written and may be given away (`DatabaseLock`), so a
    /// link to another file planted in its place (a directory another account controls) is
    /// refused, and so is a FIFO, which could hang the opener.
    public static func exclusive(_ path: String, wait: Bool) throws(Failure) -> FileLock? {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard descriptor >= 0 else {
            throw Failure(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard isPlainFile(descriptor) else {
            close(descriptor)
            throw Failure(description: "\(path) is not a regular file with a single link; remove it")
        }
        while flock(descriptor, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0 {
            if errno == EINTR { continue }
            let code = errno
            close(descriptor)
            if code == EWOULDBLOCK { return nil }
            throw Failure(description: "cannot lock \(path): \(String(cString: strerror(code)))")
        }
        return FileLock(descriptor: descriptor)
    }

    /// Whether another process holds the lock on `path` right now (false if the file is missing).
    public static func isHeld(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        guard isPlainFile(descriptor) else { return false }
        guard flock(descriptor, LOCK_SH | LOCK_NB) != 0 else {
            flock(descriptor, LOCK_UN)
            return false
        }
        return true
    }

    /// A regular file with one link (checked on the descriptor that is used).
    public static func isPlainFile(_ descriptor: Int32) -> Bool {
        var info = stat()
        return fstat(descriptor, &info) == 0 && info.isPlainFile
    }

    deinit { close(descriptor) }
}

extension stat {
    /// A regular file with one link: not a FIFO or device that could hang its opener, and no
    /// second name (a hard link planted to another file). What a lock file, a held file and a
    /// backup must be.
    public var isPlainFile: Bool { (st_mode & S_IFMT) == S_IFREG && st_nlink == 1 }
}
