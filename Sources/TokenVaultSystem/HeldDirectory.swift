#if canImport(Glibc)
    import Glibc
#endif

/// A directory held open by descriptor, so that a command run as root (`tokenvault backup`,
/// `restore`) works on a directory the service account owns without following anything that
/// account planted there: every name is opened, created, renamed or removed relative to the
/// descriptor with `O_NOFOLLOW`, files are changed through their own descriptors (`fchown`,
/// `fchmod`), and a name is one component, never a path.
///
/// The directory's own path is the operator's (from the command line or the configuration); it
/// is opened once, refusing a symbolic link as its last component.
public final class HeldDirectory: Sendable {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// The path it was opened by, for messages and for callers that need a path.
    public let path: String
    /// Who owns it: files created in it by root are given to this user and group.
    public let owner: uid_t
    public let group: gid_t
    private let descriptor: Int32

    public convenience init(_ path: String) throws(Failure) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw errno == ELOOP || errno == ENOTDIR
                ? Failure(description: "\(path) is not a directory (a symbolic link is never followed)")
                : Self.failure("open directory", path)
        }
        try self.init(descriptor: descriptor, path: path)
    }

    /// The operator's directory `path` with the links along it resolved first (`realpath`: a
    /// data directory configured as a link to where it lives), then held as above.
    public convenience init(resolving path: String) throws(Failure) {
        let resolved = realpath(path, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        }
        try self.init(resolved ?? path)
    }

    /// Whether `other` (a path, its links resolved as far as they exist) lies inside this
    /// directory.
    public func contains(path other: String) -> Bool {
        var candidate = other
        while !candidate.isEmpty, candidate != "/" {
            if isSame(asPath: candidate) { return true }
            guard let slash = candidate.lastIndex(of: "/") else { return false }
            candidate = String(candidate[..<slash])
        }
        return false
    }

    /// Takes over `descriptor` (closed on failure too).
    private init(descriptor: Int32, path: String) throws(Failure) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let problem = Self.failure("examine", path)
            close(descriptor)
            throw problem
        }
        self.path = path
        self.descriptor = descriptor
        self.owner = info.st_uid
        self.group = info.st_gid
    }

    deinit { close(descriptor) }

    /// A private scratch directory of this process's user (0700, from `mkdtemp` under `$TMPDIR`
    /// or /tmp), for work that must not happen where another account can reach it. The caller
    /// removes it with `removeScratch()`.
    public static func scratch() throws(Failure) -> HeldDirectory {
        let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((base + "/tokenvault-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw failure("create a scratch directory in", base)
        }
        return try HeldDirectory(String(cString: made))
    }

    /// Removes a scratch directory made by `scratch()` with the files in it (one level deep).
    public func removeScratch() {
        let copy = dup(descriptor)
        guard copy >= 0 else { return }
        guard let listing = fdopendir(copy) else {
            close(copy)
            return
        }
        defer { closedir(listing) }
        while let entry = readdir(listing) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { unlinkat(descriptor, name, 0) }
        }
        rmdir(path)
    }

    /// `name` inside this directory as a path, for messages and for SQLite (in a scratch
    /// directory only: nobody else can reach it).
    public func pathOf(_ name: String) -> String { path + "/" + name }

    /// The subdirectory `name`, created 0700 (and given to this directory's owner) when missing;
    /// refused when it is a symbolic link or anything but a directory.
    public func subdirectory(_ name: String, create: Bool) throws(Failure) -> HeldDirectory {
        try Self.checkName(name)
        if create {
            if mkdirat(descriptor, name, 0o700) == 0 {
                let made = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard made >= 0 else { throw Self.failure("open directory", pathOf(name)) }
                defer { close(made) }
                try giveToOwner(made, name)
            } else if errno != EEXIST {
                throw Self.failure("create directory", pathOf(name))
            }
        }
        let held = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard held >= 0 else {
            throw errno == ELOOP || errno == ENOTDIR
                ? Failure(description: "\(pathOf(name)) is not a directory (a symbolic link is never followed)")
                : Self.failure("open directory", pathOf(name))
        }
        return try HeldDirectory(descriptor: held, path: pathOf(name))
    }

    /// Creates `name` (0600, never over anything that exists, a symbolic link included) and gives
    /// it to this directory's owner when this process is root and the owner is not.
    public func createFile(_ name: String) throws(Failure) -> HeldFile {
        try Self.checkName(name)
        let created = openat(descriptor, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard created >= 0 else { throw Self.failure("create", pathOf(name)) }
        let file = HeldFile(descriptor: created, path: pathOf(name))
        try giveToOwner(created, name)
        return file
    }

    /// Opens `name` for reading: a regular file with one link, owned by this directory's owner or
    /// root, never through a symbolic link (so a hard link to someone else's file is refused too).
    public func openFile(_ name: String) throws(Failure) -> HeldFile {
        try Self.checkName(name)
        let opened = openat(descriptor, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard opened >= 0 else {
            throw errno == ELOOP
                ? Failure(description: "\(pathOf(name)) is a symbolic link; it is never followed")
                : Self.failure("open", pathOf(name))
        }
        let file = HeldFile(descriptor: opened, path: pathOf(name))
        let info = try file.status()
        guard info.isPlainFile else {
            throw Failure(description: "\(pathOf(name)) is not a regular file with a single link; refused")
        }
        guard info.st_uid == owner || info.st_uid == 0 else {
            throw Failure(description: "\(pathOf(name)) belongs to uid \(info.st_uid), not to the directory's owner")
        }
        return file
    }

    /// Whether `name` here is `file` itself (same device and inode), not something put in its
    /// place since.
    public func names(_ name: String, file: HeldFile) -> Bool {
        var here = stat()
        guard fstatat(descriptor, name, &here, AT_SYMLINK_NOFOLLOW) == 0, let info = try? file.status() else {
            return false
        }
        return here.st_dev == info.st_dev && here.st_ino == info.st_ino
    }

    /// Whether anything (a symbolic link included) is called `name` here.
    public func contains(_ name: String) -> Bool {
        var info = stat()
        return fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0
    }

    /// Renames within this directory; a symbolic link is moved as a link, never followed.
    public func rename(_ name: String, to newName: String) throws(Failure) {
        try Self.checkName(name)
        try Self.checkName(newName)
        guard renameat(descriptor, name, descriptor, newName) == 0 else {
            throw Self.failure("rename \(pathOf(name)) to", newName)
        }
    }

    /// Removes the name `name` (a link is removed, not what it points at); gone already is fine.
    public func remove(_ name: String) {
        guard (try? Self.checkName(name)) != nil else { return }
        unlinkat(descriptor, name, 0)
    }

    /// Makes renames and removals durable.
    public func flush() throws(Failure) {
        guard fsync(descriptor) == 0 else { throw Self.failure("flush directory", path) }
    }

    /// Whether the path `other` names this very directory (same device and inode), however spelt.
    public func isSame(asPath other: String) -> Bool {
        var mine = stat()
        var theirs = stat()
        guard fstat(descriptor, &mine) == 0, stat(other, &theirs) == 0 else { return false }
        return mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino
    }

    private func giveToOwner(_ created: Int32, _ name: String) throws(Failure) {
        guard geteuid() == 0, owner != 0 else { return }
        guard fchown(created, owner, group) == 0 else {
            throw Self.failure("give to uid \(owner)", pathOf(name))
        }
    }

    private static func checkName(_ name: String) throws(Failure) {
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/") else {
            throw Failure(description: "'\(name)' is not a file name")
        }
    }

    static func failure(_ action: String, _ path: String) -> Failure {
        Failure(description: "cannot \(action) \(path): \(String(cString: strerror(errno)))")
    }
}
