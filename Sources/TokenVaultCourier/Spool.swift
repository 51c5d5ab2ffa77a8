import Foundation
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultSystem

/// Provider answers the courier could not hand to a living daemon, one file per call key in
/// `<data-dir>/spool`, each sealed to the vault's spool public key (`SealedBox`): the courier,
/// which never holds the master key, can write them; only a process that unwraps the spool's
/// secret key with the master key can read them. A file is written whole or not at all
/// (`DurableFile`), and removed once its answer is committed.
///
/// File: `TVSPOOL1`, the sealed length (4 bytes, big-endian), the sealed box. Inside: the call
/// key (it must match the file name: a renamed file is refused), the call's context, when the
/// request was sent, and the answer.
public struct Spool: Sendable {
    public let directory: String

    public init(directory: String) { self.directory = directory }

    /// One spooled answer.
    public struct Entry: Sendable {
        public var key: String
        public var context: SecretBytes?
        /// When the courier sent the request: relative lifetimes in the answer count from here.
        public var sentAt: Timestamp
        var result: CallResult
    }

    /// Why a file cannot be used; the file stays where it is for the operator.
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public let file: String
        public let problem: String
        public var description: String { "spool file \(file) \(problem)" }
    }

    static let magic = Array("TVSPOOL1".utf8)
    static let plaintextMagic = Array("tokenvault.spool.v1\u{0}".utf8)
    static let suffix = ".answer"

    /// The file name of a call key's answer: a digest (keys hold ids and colons).
    public static func fileName(for key: String) -> String { String(SHA256.hex(Array(key.utf8)).prefix(40)) + suffix }

    /// Seals `entry` to `publicKey` and writes it durably (the courier, after the daemon died).
    func write(_ entry: Entry, publicKey: [UInt8]) throws {
        var writer = WireWriter()
        writer.data(Self.plaintextMagic)
        writer.string(entry.key)
        writer.optional(entry.context) { $0.secret($1) }
        writer.i64(entry.sentAt.milliseconds)
        entry.result.write(to: &writer)
        let plaintext = SecretBytes(writer.bytes)
        writer.wipe()
        let sealed = SealedBox.seal(plaintext, to: publicKey)
        var file = Self.magic
        withUnsafeBytes(of: UInt32(sealed.count).bigEndian) { file += $0 }
        file += sealed
        try DurableFile.makeDirectory(directory)
        try DurableFile.write(file, to: Self.fileName(for: entry.key), in: directory)
    }

    /// The names of the answer files present.
    public func files() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(Self.suffix) && !$0.hasPrefix(".") }.sorted()
    }

    /// Reads and opens one file with `open` (the keyring's `openSpooled`).
    public func read(_ file: String, open: (_ sealed: [UInt8]) throws -> SecretBytes) throws(Refusal) -> Entry {
        guard let bytes = FileManager.default.contents(atPath: directory + "/" + file).map(Array.init) else {
            throw Refusal(file: file, problem: "cannot be read")
        }
        guard bytes.count >= 12, Array(bytes.prefix(8)) == Self.magic else {
            throw Refusal(file: file, problem: "is not a TokenVault spool file (torn, or something else)")
        }
        let length = Int(bytes[8..<12].reduce(0) { $0 << 8 | UInt32($1) })
        guard bytes.count - 12 == length else {
            throw Refusal(file: file, problem: "is torn: \(bytes.count - 12) of \(length) sealed bytes")
        }
        let plaintext: SecretBytes
        do {
            plaintext = try open(Array(bytes[12...]))
        } catch {
            throw Refusal(file: file, problem: "was not sealed for this vault (or was altered): it does not open")
        }
        do {
            var reader = WireReader(plaintext.withUnsafeBytes { Array($0) })
            guard try reader.data() == Self.plaintextMagic else { throw WireError.malformed("wrong version") }
            let entry = Entry(
                key: try reader.string(), context: try reader.optional { try $0.secret() },
                sentAt: Timestamp(milliseconds: try reader.i64()), result: try CallResult.read(from: &reader))
            try reader.finish()
            guard Self.fileName(for: entry.key) == file else {
                throw Refusal(file: file, problem: "holds the answer for another file name: it was renamed")
            }
            return entry
        } catch let refusal as Refusal {
            throw refusal
        } catch {
            throw Refusal(file: file, problem: "opens but cannot be read: \(error)")
        }
    }

    /// Removes a call key's file, if any.
    public func remove(_ key: String) throws { try DurableFile.remove(Self.fileName(for: key), in: directory) }

    /// The lock a courier holds while it lives: a new courier waits for an old one to finish.
    var lockPath: String { directory + "/courier.lock" }
}
