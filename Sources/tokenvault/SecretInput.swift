import ArgumentParser
import Foundation

/// Secrets a command needs (a one-time code, a PKCE verifier) read from a file or standard input,
/// never from arguments: a process's arguments are readable by every local user.
enum SecretInput {
    /// Secrets are short; a larger input is a mistake (the wrong file), not something to load.
    static let maximumBytes = 16 * 1024

    /// The non-empty lines of `path` (`-`: standard input), trailing `\r` removed.
    static func lines(_ path: String, what option: String) throws -> [String] {
        let data: Data
        if path == "-" {
            data = FileHandle.standardInput.readData(ofLength: maximumBytes + 1)
        } else {
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw ValidationError("\(option) \(path) cannot be read")
            }
            defer { try? handle.close() }
            data = handle.readData(ofLength: maximumBytes + 1)
        }
        guard data.count <= maximumBytes else {
            throw ValidationError("\(option) \(path) is larger than \(maximumBytes) bytes")
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true)
            .map { line in line.hasSuffix("\r") ? String(line.dropLast()) : String(line) }
    }
}
