#if canImport(Glibc)
    import Glibc
#endif

/// A file held open by descriptor, from `HeldDirectory` or created by `create(_:)`: everything
/// done to it (copying, flushing, changing its mode) goes through the descriptor, so a name
/// swapped after it was opened changes nothing. Closed when the object goes away.
public final class HeldFile: Sendable {
    public let path: String
    private let descriptor: Int32

    init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    /// Creates `path` for writing, 0600, never over anything that exists (a symbolic link
    /// included): for a destination the operator named, such as `tokenvault backup --to`.
    public static func create(_ path: String) throws(HeldDirectory.Failure) -> HeldFile {
        let created = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard created >= 0 else {
            throw errno == EEXIST
                ? HeldDirectory.Failure(description: "\(path) already exists; nothing is ever written over a file")
                : HeldDirectory.failure("create", path)
        }
        return HeldFile(descriptor: created, path: path)
    }

    /// Opens a file the operator named (a backup to restore) for reading: a regular file, never
    /// through a symbolic link as its last component.
    public static func open(_ path: String) throws(HeldDirectory.Failure) -> HeldFile {
        let opened = Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard opened >= 0 else {
            throw errno == ELOOP
                ? HeldDirectory.Failure(description: "\(path) is a symbolic link; give the file itself")
                : HeldDirectory.failure("open", path)
        }
        let file = HeldFile(descriptor: opened, path: path)
        guard (try file.status().st_mode & S_IFMT) == S_IFREG else {
            throw HeldDirectory.Failure(description: "\(path) is not a regular file")
        }
        return file
    }

    func status() throws(HeldDirectory.Failure) -> stat {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw HeldDirectory.failure("examine", path) }
        return info
    }

    public func size() throws(HeldDirectory.Failure) -> Int64 { Int64(try status().st_size) }

    /// Copies this file's bytes from its start into `target` (written from its current offset)
    /// and flushes `target` to disk; returns the number of bytes copied.
    @discardableResult
    public func copy(to target: HeldFile) throws(HeldDirectory.Failure) -> Int64 {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var offset: off_t = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress!, $0.count, offset) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw HeldDirectory.failure("read", path) }
            if count == 0 { break }
            var written = 0
            while written < count {
                let step = buffer.withUnsafeBytes {
                    write(target.descriptor, $0.baseAddress! + written, count - written)
                }
                if step < 0, errno == EINTR { continue }
                guard step != 0 else {
                    throw HeldDirectory.Failure(description: "cannot write \(target.path): a short write (disk full?)")
                }
                guard step > 0 else { throw HeldDirectory.failure("write", target.path) }
                written += step
            }
            offset += off_t(count)
        }
        guard fsync(target.descriptor) == 0 else { throw HeldDirectory.failure("flush", target.path) }
        return Int64(offset)
    }

    /// `fchmod`: the mode of the file this descriptor holds, whatever its name is now.
    public func setMode(_ mode: mode_t) throws(HeldDirectory.Failure) {
        guard fchmod(descriptor, mode) == 0 else { throw HeldDirectory.failure("chmod", path) }
    }
}
