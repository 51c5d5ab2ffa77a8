import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension TokenVaultClient {
    /// The packaged daemon's socket (`make deb`, the systemd unit).
    public static let packagedSocketPath = "/run/tokenvault/tokenvault.sock"
    /// Where `make run` puts the socket, relative to the directory it was started in.
    public static let localSocketPath = ".tokenvault/run/tokenvault.sock"

    /// The daemon's socket when none is named: `$TOKENVAULT_SOCKET` when set and not empty, else
    /// the socket of the data directory the caller named (the CLI's `--data-dir` or
    /// `$TOKENVAULT_DATA_DIR`), else the packaged daemon's socket when it exists, else `make run`'s socket under the current
    /// directory when `.tokenvault` and `.tokenvault/run` are directories of the caller's own
    /// that no one else can write, else the packaged path (which the error then names).
    ///
    /// The local socket is checked because the current directory may be anyone's (`/tmp`, a
    /// shared checkout): a socket another user planted there would receive the refresh tokens a
    /// script stores, or the code and verifier it exchanges. The same rule is in the CLI,
    /// `tokenvault mcp` and the Python, Go, Java and Node clients.
    public static func defaultSocketPath(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        dataDirectory: String? = nil,
        currentDirectory: String = FileManager.default.currentDirectoryPath,
        packaged: String = packagedSocketPath
    ) -> String {
        if let path = environment["TOKENVAULT_SOCKET"], !path.isEmpty { return path }
        if let dataDirectory, !dataDirectory.isEmpty {
            return URL(fileURLWithPath: dataDirectory).standardizedFileURL.path + "/run/tokenvault.sock"
        }
        if FileManager.default.fileExists(atPath: packaged) { return packaged }
        let base = URL(fileURLWithPath: currentDirectory)
        let dataDirectory = base.appendingPathComponent(".tokenvault").path
        let runDirectory = dataDirectory + "/run"
        if isOwnUnsharedDirectory(dataDirectory), isOwnUnsharedDirectory(runDirectory) {
            return base.appendingPathComponent(localSocketPath).path
        }
        return packaged
    }

    /// A directory (not a link to one) owned by this process's user, which neither its group nor
    /// others may write.
    static func isOwnUnsharedDirectory(_ path: String) -> Bool {
        var status = stat()
        guard lstat(path, &status) == 0 else { return false }
        return status.st_mode & S_IFMT == S_IFDIR && status.st_uid == geteuid() && status.st_mode & 0o022 == 0
    }
}
