#if canImport(Glibc)
    import Glibc
#endif

/// Files that must survive a crash the moment the call returns: written to a temporary name,
/// flushed, renamed into place and the directory flushed, so after a power cut the file is
/// either absent or whole, never torn under its final name. Removal flushes the directory too.
public enum DurableFile {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Creates `directory/name` with `bytes`, readable by the owner only (0600); an existing file
    /// of that name is replaced.
    public static func write(_ bytes: [UInt8], to name: String, in directory: String) throws(Failure) {
        let final = directory + "/" + name
        let temporary = directory + "/." + name + ".tmp"
        unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw failure("create", temporary) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes {
                Glibc.write(descriptor, $0.baseAddress! + written, bytes.count - written)
            }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                let problem = failure("write", temporary)
                close(descriptor)
                unlink(temporary)
                throw problem
            }
            written += count
        }
        guard fsync(descriptor) == 0 else {
            let problem = failure("flush", temporary)
            close(descriptor)
            unlink(temporary)
            throw problem
        }
        close(descriptor)
        guard rename(temporary, final) == 0 else {
            let problem = failure("rename", final)
            unlink(temporary)
            throw problem
        }
        try flushDirectory(directory)
    }

    /// Removes `directory/name` (gone already is fine) and flushes the directory.
    public static func remove(_ name: String, in directory: String) throws(Failure) {
        guard unlink(directory + "/" + name) == 0 || errno == ENOENT else { throw failure("remove", name) }
        try flushDirectory(directory)
    }

    /// Creates `path` as a directory for the owner only (0700) unless it exists.
    public static func makeDirectory(_ path: String) throws(Failure) {
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else { throw failure("create directory", path) }
    }

    /// Makes the renames and removals in `directory` durable.
    public static func flushDirectory(_ directory: String) throws(Failure) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure("open directory", directory) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw failure("flush directory", directory) }
    }

    private static func failure(_ action: String, _ path: String) -> Failure {
        Failure(description: "cannot \(action) \(path): \(String(cString: strerror(errno)))")
    }
}
