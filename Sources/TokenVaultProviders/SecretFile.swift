import TokenVaultCore
import TokenVaultSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Reads a client secret (or a certificate password) from a file the way the master key file is
/// read (`PrivateFile`: no symbolic link, a regular file of this user or root, no access for
/// group or others), straight into locked memory, trailing newlines dropped.
enum SecretFile {
    static let maximumSize = 4096

    /// The secret, or a sentence saying what is wrong with the file.
    static func read(_ path: String) -> Result<SecretBytes, OptionProblem> {
        let contents: SecretBytes
        do {
            contents = try PrivateFile.read(path, what: "secret file", maximumSize: maximumSize)
        } catch {
            return .failure(OptionProblem(error.message))
        }
        let secret = contents.withUnsafeBytes { raw in
            var bytes = raw[...]
            while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") {
                bytes = bytes.dropLast()
            }
            return SecretBytes(bytes)
        }
        guard !secret.isEmpty else { return .failure(OptionProblem("\(path) is empty")) }
        return .success(secret)
    }
}
