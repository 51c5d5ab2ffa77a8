import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A node's identity in a vault several daemons share: 16 random bytes in hex, created once in
/// `<data-dir>/node.id` and kept. Not derived from the host name or the path: two containers with
/// the same host name and data path (each daemon pid 1) must not take each other's leases. A data
/// directory copied to a second host copies its identity too; the docs say to delete `node.id`
/// in the copy.
public enum NodeIdentity {
    public static let fileName = "node.id"

    /// A new identity: 16 random bytes in lower-case hex.
    public static func random() -> String {
        (0..<16).map { _ in
            let byte = UInt8.random(in: .min ... .max)
            return (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
    }

    /// The identity `dataDirectory` holds, if it has one (read, never created: for commands that
    /// only show which node is this one).
    public static func existing(dataDirectory: String) -> String? {
        let path = dataDirectory + "/" + fileName
        guard access(path, F_OK) == 0 else { return nil }
        return try? read(path)
    }

    /// The identity in `dataDirectory`, created there (durably, 0600) on first use. Call with
    /// the vault's lock held: one daemon at a time reads or creates it.
    public static func load(dataDirectory: String) throws(PrivateFile.Problem) -> String {
        let path = dataDirectory + "/" + fileName
        if access(path, F_OK) != 0, errno == ENOENT {
            let text = random()
            do {
                try DurableFile.write(Array((text + "\n").utf8), to: fileName, in: dataDirectory)
            } catch {
                throw PrivateFile.Problem(message: "node identity \(path) cannot be created: \(error)")
            }
            return text
        }
        return try read(path)
    }

    /// A stored identity, checked: 8 to 64 lower-case hex digits.
    private static func read(_ path: String) throws(PrivateFile.Problem) -> String {
        let stored = try PrivateFile.read(path, what: "node identity", maximumSize: 256)
        let text = stored.revealString().trimmingCharacters(in: .whitespacesAndNewlines)
        guard (8...64).contains(text.count), text.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else {
            throw PrivateFile.Problem(
                message: "node identity \(path) is not 8 to 64 lower-case hex digits; delete it to have a new one made")
        }
        return text
    }
}
