/// Secret material (tokens, keys) held in locked memory, zeroed when the last copy goes away.
///
/// It never shows itself: `description`, `debugDescription`, string interpolation, `dump` and
/// `Mirror` all print `<redacted>`. The value comes out only through the explicit
/// `withUnsafeBytes`, `revealBytes()` or `revealString()` calls, which are easy to grep for.
/// Equality is constant-time in the contents (the length is not hidden).
public struct SecretBytes: Sendable {
    // Immutable after init; the pointer is only read through, so sharing is safe.
    private final class Storage: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        let count: Int

        init(count: Int) {
            self.count = count
            pointer = SecureArena.shared.allocate(count)
        }

        deinit { SecureArena.shared.release(pointer, count: count) }
    }

    private let storage: Storage

    /// Fills a new secret of `count` bytes in place, so the value never exists outside locked memory.
    public init(count: Int, initializingWith body: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        storage = Storage(count: count)
        try body(UnsafeMutableRawBufferPointer(start: storage.pointer, count: count))
    }

    public init(_ bytes: some Collection<UInt8>) {
        self.init(count: bytes.count) { buffer in
            _ = buffer.initializeMemory(as: UInt8.self, from: bytes)
        }
    }

    public init(utf8 string: String) {
        var copy = string
        self = copy.withUTF8 { SecretBytes($0) }
    }

    public var count: Int { storage.count }
    public var isEmpty: Bool { storage.count == 0 }

    /// Whether secrets live in memory the kernel will not swap out.
    public static var isMemoryLocked: Bool { SecureArena.shared.isLocked }

    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: storage.pointer, count: storage.count))
    }

    /// Copies the secret out of locked memory. The caller owns the copy's fate.
    public func revealBytes() -> [UInt8] { withUnsafeBytes { Array($0) } }

    /// The secret as UTF-8 text (invalid sequences are repaired), for handing to a peer.
    public func revealString() -> String { withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
}

extension SecretBytes: Equatable {
    public static func == (lhs: SecretBytes, rhs: SecretBytes) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBytes { left in
            rhs.withUnsafeBytes { right in constantTimeEquals(left, right) }
        }
    }
}

/// Compares every byte whatever the first difference, so timing says nothing about where it is.
@inline(never)
func constantTimeEquals(_ left: UnsafeRawBufferPointer, _ right: UnsafeRawBufferPointer) -> Bool {
    var difference: UInt8 = 0
    for index in 0..<left.count {
        difference |= left[index] ^ right[index]
    }
    return difference == 0
}

extension SecretBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "<redacted>" }
    public var debugDescription: String { "SecretBytes(<redacted>)" }
    public var customMirror: Mirror { Mirror(self, children: ["value": "<redacted>"], displayStyle: .struct) }
}
