import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Messages over the daemon-courier socketpair: a 4-byte big-endian length, then the message.
/// Blocking system calls: one thread reads (`FrameReader`), any thread writes, one at a time
/// (`FrameWriter`). A few thousand small frames a second need nothing cleverer.
final class FrameWriter: Sendable {
    let descriptor: Int32
    /// Whether the descriptor is closed. Held while writing, shutting down or closing, so a
    /// descriptor number is never used after `close` (the kernel hands it to the next `open`).
    private let closed = Mutex(false)

    init(descriptor: Int32) { self.descriptor = descriptor }

    /// Shuts the link down both ways: the other side sees end of file. The descriptor stays open
    /// (the reading thread may still be in `recv`) until `close`.
    func shutDown() {
        closed.withLock { closed in if !closed { _ = shutdown(descriptor, Int32(SHUT_RDWR)) } }
    }

    /// Closes the descriptor for good, once the reading thread is done with it: one per courier,
    /// not one leaked per restart. Later sends fail as closed.
    func close() {
        closed.withLock { closed in
            guard !closed else { return }
            closed = true
            _ = shutdown(descriptor, Int32(SHUT_RDWR))
            _ = Glibc.close(descriptor)
        }
    }

    /// Writes one message whole; throws when the other process is gone.
    func send(_ message: CourierMessage) throws {
        let payload = message.encoded()
        var frame = [UInt8]()
        frame.reserveCapacity(payload.count + 4)
        withUnsafeBytes(of: UInt32(payload.count).bigEndian) { frame += $0 }
        frame += payload
        try closed.withLock { closed in
            guard !closed else { throw FrameError.closed(errno: EBADF) }
            var sent = 0
            while sent < frame.count {
                let count = frame.withUnsafeBytes {
                    Glibc.send(descriptor, $0.baseAddress! + sent, frame.count - sent, Int32(MSG_NOSIGNAL))
                }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw FrameError.closed(errno: errno)
                }
                sent += count
            }
        }
    }
}

/// Reads messages from the socketpair; owned by the one thread that reads.
struct FrameReader {
    let descriptor: Int32
    /// No message is larger: an answer body is at most 1 MiB.
    static let maximumFrame = 4 << 20

    /// The next message, or nil once the other process closed its end (or died).
    mutating func receive() throws -> CourierMessage? {
        guard let header = try read(count: 4) else { return nil }
        let length = Int(header.reduce(0) { $0 << 8 | UInt32($1) })
        guard length <= Self.maximumFrame else { throw FrameError.tooLarge(length) }
        guard let payload = try read(count: length) else { throw FrameError.truncated }
        return try CourierMessage.decode(payload)
    }

    /// Exactly `count` bytes; nil at end of file before the first byte.
    private func read(count: Int) throws -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var received = 0
        while received < count {
            let result = bytes.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress! + received, count - received, 0)
            }
            if result < 0 {
                if errno == EINTR { continue }
                guard errno == ECONNRESET else { throw FrameError.closed(errno: errno) }
            }
            if result <= 0 {
                guard received == 0 else { throw FrameError.truncated }
                return nil
            }
            received += result
        }
        return bytes
    }
}

enum FrameError: Error, CustomStringConvertible {
    case closed(errno: Int32)
    case truncated
    case tooLarge(Int)

    var description: String {
        switch self {
        case .closed(let code): "the courier connection failed: \(String(cString: strerror(code)))"
        case .truncated: "the courier connection ended in the middle of a message"
        case .tooLarge(let length): "a courier message of \(length) bytes is larger than allowed"
        }
    }
}
