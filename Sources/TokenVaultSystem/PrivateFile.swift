import TokenVaultCore

#if canImport(Glibc)
    import Glibc
#endif

/// Reads a file that holds a secret (the master key, a passphrase, a client secret, a PKCS#12
/// password), the one way every module reads one:
///
/// - opened with `O_NOFOLLOW` (a symbolic link is refused, not followed) and `O_NONBLOCK` (a FIFO
///   put in its place cannot hang start-up), and checked with `fstat` on the descriptor it reads,
///   so what is checked is what is read (no check-then-open race);
/// - it must be a regular file, owned by this process's user or root, with no access for group
///   or others (the message says the `chmod`/`chown` that fixes it);
/// - it is read straight into locked memory (`SecretBytes`), at most `maximumSize` bytes.
public enum PrivateFile {
    /// What is wrong with the file, for the caller to wrap in its own error (it names the file).
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// The file's bytes; `what` names it in messages ("key file", "client secret file").
    public static func read(_ path: String, what: String, maximumSize: Int) throws(Problem) -> SecretBytes {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else {
            let reason = errno == ELOOP ? "is a symbolic link; give the file itself" : String(cString: strerror(errno))
            throw Problem(message: "\(what) \(path) cannot be opened: \(reason)")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw Problem(message: "\(what) \(path) cannot be examined: \(String(cString: strerror(errno)))")
        }
        try checkOwnerAndMode(info, path: path, what: what, expectedType: S_IFREG, typeName: "a regular file")
        // A second name would be a second way to the secret, or a link planted to another file.
        guard info.st_nlink == 1 else {
            throw Problem(message: "\(what) \(path) has \(info.st_nlink) links; give a file with one name")
        }
        guard Int(info.st_size) <= maximumSize else {
            throw Problem(message: "\(what) \(path) is \(info.st_size) bytes; expected at most \(maximumSize)")
        }
        var total = 0
        var failure: Int32 = 0
        let buffer = SecretBytes(count: maximumSize + 1) { bytes in
            while total <= maximumSize {
                let count = Glibc.read(descriptor, bytes.baseAddress! + total, maximumSize + 1 - total)
                if count == 0 { break }
                if count < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    break
                }
                total += count
            }
        }
        guard failure == 0 else {
            throw Problem(message: "\(what) \(path) cannot be read: \(String(cString: strerror(failure)))")
        }
        guard total <= maximumSize else {
            throw Problem(message: "\(what) \(path) is larger than \(maximumSize) bytes")
        }
        return buffer.withUnsafeBytes { SecretBytes($0[0..<total]) }
    }

    /// Refuses a directory that holds secrets (the data directory) if it is not a directory
    /// owned by this process's user or root with no access for group or others.
    public static func checkDirectory(_ path: String, what: String) throws(Problem) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw Problem(message: "\(what) \(path) cannot be examined: \(String(cString: strerror(errno)))")
        }
        try checkOwnerAndMode(info, path: path, what: what, expectedType: S_IFDIR, typeName: "a directory")
    }

    /// Refuses the file a secret was copied from (systemd's `LoadCredential=` source, which the
    /// copy in `$CREDENTIALS_DIRECTORY` no longer shows): the copy is private to the service
    /// whatever the source's mode, so a source readable by a group (the one API callers join)
    /// or others would go unnoticed. The same owner and mode rules as `read`, checked with `stat`.
    public static func checkSource(_ path: String, what: String) throws(Problem) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw Problem(
                message: "\(what) \(path) cannot be examined: \(String(cString: strerror(errno))); it names the "
                    + "file LoadCredential= reads, so that its mode can be checked: correct it or remove the setting")
        }
        try checkOwnerAndMode(info, path: path, what: what, expectedType: S_IFREG, typeName: "a regular file")
    }

    private static func checkOwnerAndMode(
        _ info: stat, path: String, what: String, expectedType: mode_t, typeName: String
    ) throws(Problem) {
        guard (info.st_mode & S_IFMT) == expectedType else {
            throw Problem(message: "\(what) \(path) is not \(typeName)")
        }
        let user = geteuid()
        guard info.st_uid == user || info.st_uid == 0 else {
            throw Problem(
                message: "\(what) \(path) belongs to uid \(info.st_uid), not to this process's user (uid \(user)) "
                    + "or root; refusing to use it. Run this command as uid \(info.st_uid), or fix: chown \(user) \(path)"
            )
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            let octal = String(mode, radix: 8)
            throw Problem(
                message: "\(what) \(path) can be read by group or others (mode "
                    + "\(String(repeating: "0", count: max(0, 4 - octal.count)) + octal)); refusing to use it. "
                    + "Fix: chmod \(expectedType == S_IFDIR ? "700" : "600") \(path)")
        }
    }
}
