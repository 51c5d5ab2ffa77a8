import CSodium
import TokenVaultCore
import TokenVaultSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Loading, creating and deriving the 32-byte master key that wraps the data keys.
public enum MasterKey {
    public static let size = 32

    /// Reads a key file: 32 raw bytes, or 64 hex characters with an optional newline.
    /// Refuses a file that group or others can read, naming the file and the fix.
    public static func read(keyFile path: String) throws -> SecretBytes {
        let contents = try readPrivateFile(path, what: "key file", maximumSize: 128)
        if contents.count == size { return contents }
        return try contents.withUnsafeBytes { raw in
            var hex = raw[...]
            while let last = hex.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { hex = hex.dropLast() }
            guard hex.count == size * 2 else {
                throw VaultError.keySource(
                    "key file \(path) must hold 32 bytes, raw or as 64 hex characters (it holds \(contents.count) bytes)"
                )
            }
            return try SecretBytes(count: size) { key in
                var decoded = 0
                let result = hex.withUnsafeBytes { hexBytes in
                    sodium_hex2bin(
                        key.baseAddress!.assumingMemoryBound(to: UInt8.self), size,
                        hexBytes.baseAddress!.assumingMemoryBound(to: CChar.self), hexBytes.count, nil, &decoded, nil)
                }
                guard result == 0, decoded == size else {
                    throw VaultError.keySource("key file \(path) holds 64 characters that are not all hexadecimal")
                }
            }
        }
    }

    /// Creates a new random key file (mode 0600, hex) at `path`; refuses to overwrite one.
    @discardableResult
    public static func create(keyFile path: String) throws -> SecretBytes {
        requireSodium()
        let key = SodiumRandom.secret(count: size)
        let hex = SecretBytes(count: size * 2 + 1) { text in
            key.withUnsafeBytes { keyBytes in
                var characters = [CChar](repeating: 0, count: size * 2 + 1)
                _ = sodium_bin2hex(
                    &characters, characters.count, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), size)
                for index in 0..<(size * 2) { text[index] = UInt8(bitPattern: characters[index]) }
                sodium_memzero(&characters, characters.count)
            }
            text[size * 2] = UInt8(ascii: "\n")
        }
        try writeNewPrivateFile(path, contents: hex, what: "key file")
        return key
    }

    /// Reads a passphrase file (same permission rule as key files); trailing newlines are dropped.
    public static func read(passphraseFile path: String) throws -> SecretBytes {
        let contents = try readPrivateFile(path, what: "passphrase file", maximumSize: 4096)
        let trimmed = contents.withUnsafeBytes { raw in
            var bytes = raw[...]
            while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") {
                bytes = bytes.dropLast()
            }
            return SecretBytes(bytes)
        }
        guard trimmed.count >= 8 else {
            throw VaultError.keySource("passphrase in \(path) is shorter than 8 characters")
        }
        return trimmed
    }

    // MARK: Files

    /// A key or passphrase file, opened and checked by `PrivateFile` (no symbolic link, a regular
    /// file of this user or root, no access for group or others).
    static func readPrivateFile(_ path: String, what: String, maximumSize: Int) throws -> SecretBytes {
        do {
            return try PrivateFile.read(path, what: what, maximumSize: maximumSize)
        } catch {
            throw VaultError.keySource(error.message)
        }
    }

    static func writeNewPrivateFile(_ path: String, contents: SecretBytes, what: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw VaultError.keySource("cannot create \(what) \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let written = contents.withUnsafeBytes { write(descriptor, $0.baseAddress!, $0.count) }
        guard written == contents.count, fsync(descriptor) == 0 else {
            unlink(path)
            throw VaultError.keySource("cannot write \(what) \(path): \(String(cString: strerror(errno)))")
        }
    }
}
