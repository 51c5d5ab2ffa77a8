import TokenVaultCore

#if canImport(Glibc)
    import Glibc
#endif

/// Reads a client secret from a file the way the master key file is read: refused when group
/// or others may read it, straight into locked memory, trailing newlines dropped.
/// (Providers may not import TokenVaultCrypto, so the rule is restated here.)
enum SecretFile {
    static let maximumSize = 4096

    /// The secret, or a sentence saying what is wrong with the file.
    static func read(_ path: String) -> Result<SecretBytes, OptionProblem> {
        var info = stat()
        guard stat(path, &info) == 0 else {
            return .failure(OptionProblem("\(path) cannot be read: \(String(cString: strerror(errno)))"))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            return .failure(OptionProblem("\(path) is not a regular file"))
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            return .failure(
                OptionProblem(
                    "\(path) can be read by group or others (mode 0\(String(mode, radix: 8))); "
                        + "refusing to use it. Fix: chmod 600 \(path)"))
        }
        guard Int(info.st_size) <= maximumSize else {
            return .failure(
                OptionProblem("\(path) is \(info.st_size) bytes; a client secret is at most \(maximumSize)"))
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            return .failure(OptionProblem("\(path) cannot be opened: \(String(cString: strerror(errno)))"))
        }
        defer { close(descriptor) }
        var total = 0
        var failed = false
        let buffer = SecretBytes(count: maximumSize + 1) { bytes in
            while total <= maximumSize {
                let count = Glibc.read(descriptor, bytes.baseAddress! + total, maximumSize + 1 - total)
                if count == 0 { break }
                if count < 0 {
                    failed = true
                    break
                }
                total += count
            }
        }
        guard !failed, total <= maximumSize else {
            return .failure(OptionProblem("\(path) cannot be read completely"))
        }
        let secret = buffer.withUnsafeBytes { raw in
            var bytes = raw[0..<total]
            while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") {
                bytes = bytes.dropLast()
            }
            return SecretBytes(bytes)
        }
        guard !secret.isEmpty else { return .failure(OptionProblem("\(path) is empty")) }
        return .success(secret)
    }
}
