import Foundation

/// A private temporary directory, removed when the value is released.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(_ prefix: String = "tokenvault-test") {
        let base = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(prefix)-XXXXXX")
        var template = Array(base.standardizedFileURL.path.utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(created != nil, "mkdtemp failed")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Writes `contents` to a new file at `path` (replacing one there) with `permissions`. A test
/// cannot go on without its file, and a temporary directory that refuses one is a broken
/// machine, not an outcome: it stops there, saying which file.
public func writeFile(_ path: String, _ contents: Data = Data(), permissions: Int? = nil) {
    let attributes: [FileAttributeKey: Any]? = permissions.map { [.posixPermissions: $0] }
    guard FileManager.default.createFile(atPath: path, contents: contents, attributes: attributes) else {
        preconditionFailure("cannot write \(path)")
    }
}

/// Byte-level helpers for tests that inspect raw files.
public enum RawBytes {
    /// The file's bytes, or empty if it does not exist.
    public static func read(_ path: String) -> [UInt8] {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? []
    }

    /// Whether `needle` occurs anywhere in `haystack`.
    public static func contains(_ haystack: [UInt8], _ needle: some Collection<UInt8>) -> Bool {
        let needle = Array(needle)
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        let first = needle[0]
        var index = 0
        while index <= haystack.count - needle.count {
            if haystack[index] == first, Array(haystack[index..<(index + needle.count)]) == needle { return true }
            index += 1
        }
        return false
    }

    public static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }
}
