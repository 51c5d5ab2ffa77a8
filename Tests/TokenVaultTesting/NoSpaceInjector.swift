import Foundation

/// A full disk for one daemon, injected: a small preloaded library makes every write to a file
/// under `directory` fail with `ENOSPC` while `flag` exists, as a disk with no space left would
/// (SQLite answers `SQLITE_FULL`). A real small filesystem would not do: SQLite writes its WAL
/// from the start again after each checkpoint, into blocks the file already has, so a full
/// filesystem fails its writes only now and then.
public struct NoSpaceInjector {
    public let library: String
    public let flag: String
    public let directory: String

    /// The environment that loads it into a daemon (and the courier it starts).
    public var environment: [String: String] {
        ["LD_PRELOAD": library, "TOKENVAULT_TEST_NOSPACE_FLAG": flag, "TOKENVAULT_TEST_NOSPACE_DIRECTORY": directory]
    }

    /// Builds the library with the system's C compiler into `workDirectory`.
    public init(directory: String, workDirectory: String) throws {
        self.directory = directory
        library = workDirectory + "/nospace.so"
        flag = workDirectory + "/nospace.flag"
        let source = workDirectory + "/nospace.c"
        try Self.source.write(toFile: source, atomically: true, encoding: .utf8)
        guard
            let compiler = ["/usr/bin/cc", "/usr/bin/clang", "/usr/bin/gcc"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else { throw SocketTestError("no C compiler to build the ENOSPC injector") }
        let built = try CommandRunner(executable: compiler).run([
            "-shared", "-fPIC", "-O1", "-o", library, source, "-ldl",
        ])
        guard built.status == 0 else { throw SocketTestError("the ENOSPC injector did not build: \(built.stderr)") }
    }

    /// From now on, writes under `directory` fail for lack of space.
    public func fill() {
        let created = FileManager.default.createFile(atPath: flag, contents: Data())
        precondition(created, "cannot create \(flag)")
    }

    /// Space is back.
    public func release() { try? FileManager.default.removeItem(atPath: flag) }

    static let source = #"""
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <errno.h>
        #include <limits.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/stat.h>
        #include <sys/types.h>
        #include <sys/uio.h>
        #include <unistd.h>

        /* Whether a write to fd must fail: the flag file exists and fd is a file under the directory. */
        static int full(int fd) {
            const char *flag = getenv("TOKENVAULT_TEST_NOSPACE_FLAG");
            const char *directory = getenv("TOKENVAULT_TEST_NOSPACE_DIRECTORY");
            struct stat st;
            int saved = errno;
            int absent = !flag || !directory || stat(flag, &st) != 0;
            errno = saved;
            if (absent) return 0;
            char link[64], path[PATH_MAX];
            snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
            ssize_t n = readlink(link, path, sizeof path - 1);
            if (n <= 0) return 0;
            path[n] = 0;
            size_t length = strlen(directory);
            return strncmp(path, directory, length) == 0 && (path[length] == '/' || path[length] == 0);
        }

        #define WRAP(ret, name, params, args, fdarg)                   \
            ret name params {                                          \
                static ret (*real) params;                             \
                if (!real) real = (ret (*) params) dlsym(RTLD_NEXT, #name); \
                if (full(fdarg)) { errno = ENOSPC; return -1; }        \
                return real args;                                      \
            }

        WRAP(ssize_t, write, (int fd, const void *buf, size_t count), (fd, buf, count), fd)
        WRAP(ssize_t, pwrite, (int fd, const void *buf, size_t count, off_t offset), (fd, buf, count, offset), fd)
        WRAP(ssize_t, pwrite64, (int fd, const void *buf, size_t count, off64_t offset), (fd, buf, count, offset), fd)
        WRAP(ssize_t, writev, (int fd, const struct iovec *iov, int iovcnt), (fd, iov, iovcnt), fd)
        WRAP(int, fallocate, (int fd, int mode, off_t offset, off_t len), (fd, mode, offset, len), fd)

        /* Answers the error instead of setting errno. */
        int posix_fallocate(int fd, off_t offset, off_t len) {
            static int (*real)(int, off_t, off_t);
            if (!real) real = (int (*)(int, off_t, off_t)) dlsym(RTLD_NEXT, "posix_fallocate");
            if (full(fd)) return ENOSPC;
            return real(fd, offset, len);
        }
        """#
}
