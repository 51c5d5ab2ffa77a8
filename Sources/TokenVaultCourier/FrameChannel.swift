import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Messages over the daemon-courier socketpair: a 4-byte big-endian length, then the message.
/// One thread reads (`FrameReader`, blocking). Writing never blocks its caller: `send`
/// queues the frame and one thread of the writer's own writes them in order, so a courier slow
/// to read holds that thread, never one of the concurrency pool's few.
final class FrameWriter: Sendable {
    let descriptor: Int32

    private struct State {
        var frames: [[UInt8]] = []
        /// A write failed: the link is broken, later sends fail at once.
        var broken = false
        /// `close` was asked: the writing thread closes the descriptor once the queue is written.
        var closing = false
        /// The writing thread has frames in hand.
        var writing = false
        /// `shutDown` was asked while frames were queued: done once they are written.
        var shutDownAfterQueue = false
        /// The descriptor is closed. Checked under the lock by everything that uses it, so its
        /// number is never used after it is closed (the kernel hands it to the next `open`).
        var closed = false
    }

    private let state = Mutex(State())
    private let queued = DispatchSemaphore(value: 0)

    init(descriptor: Int32) {
        self.descriptor = descriptor
        let thread = Thread { [self] in writeFrames() }
        thread.name = "tokenvault-frame-writer"
        thread.start()
    }

    /// Queues one message; throws when the link is already broken or closed (nothing was sent).
    /// A write that fails later breaks the link, which the reading side sees as its end.
    func send(_ message: CourierMessage) throws {
        var payload = message.encoded()
        var frame = [UInt8]()
        frame.reserveCapacity(payload.count + 4)
        withUnsafeBytes(of: UInt32(payload.count).bigEndian) { frame += $0 }
        frame += payload
        payload.wipe()
        try state.withLock { state in
            guard !state.broken, !state.closing else { throw FrameError.closed(errno: EPIPE) }
            state.frames.append(frame)
        }
        queued.signal()
    }

    /// Shuts the link down both ways, after what is queued (a `settle` sent just before must
    /// arrive): the other side sees end of file. The descriptor stays open (the reading thread
    /// may still be in `recv`) until `close`.
    func shutDown() {
        state.withLock { state in
            guard !state.closed else { return }
            if state.frames.isEmpty, !state.writing {
                _ = shutdown(descriptor, Int32(SHUT_RDWR))
            } else {
                state.shutDownAfterQueue = true
            }
        }
    }

    /// Closes the descriptor for good once what is queued is written (or failed), when the reading
    /// thread is done with it: one descriptor per courier, not one leaked per restart.
    func close() {
        state.withLock { $0.closing = true }
        queued.signal()
    }

    /// The writing thread: frames in the order they were queued, until `close`.
    private func writeFrames() {
        while true {
            queued.wait()
            var (frames, closing, broken) = state.withLock { state in
                defer {
                    state.frames = []
                    state.writing = true
                }
                return (state.frames, state.closing, state.broken)
            }
            var failed = broken
            // Frames carry refresh tokens and answers: each is wiped once written (or dropped).
            for index in frames.indices {
                if !failed { failed = !write(frames[index]) }
                frames[index].wipe()
            }
            state.withLock { state in
                state.writing = false
                if failed { state.broken = true }
                if failed || (state.shutDownAfterQueue && state.frames.isEmpty) {
                    state.shutDownAfterQueue = false
                    _ = shutdown(descriptor, Int32(SHUT_RDWR))
                }
            }
            if closing {
                state.withLock { state in
                    state.closed = true
                    _ = shutdown(descriptor, Int32(SHUT_RDWR))
                    _ = Glibc.close(descriptor)
                }
                return
            }
        }
    }

    /// One frame whole; false when the other process is gone.
    private func write(_ frame: [UInt8]) -> Bool {
        var sent = 0
        while sent < frame.count {
            let count = frame.withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress! + sent, frame.count - sent, Int32(MSG_NOSIGNAL))
            }
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            sent += count
        }
        return true
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
        guard var payload = try read(count: length) else { throw FrameError.truncated }
        defer { payload.wipe() }
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
