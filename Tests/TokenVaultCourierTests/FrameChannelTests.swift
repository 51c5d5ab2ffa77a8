import Foundation
import Synchronization
import Testing
import TokenVaultTesting

@testable import TokenVaultCourier

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon-courier link's framing: writing never blocks the caller (a courier slow to read
/// must not hold a concurrency-pool thread), frames arrive whole and in order, and the descriptor
/// is closed once, after what was queued.
@Suite struct FrameChannelTests {
    /// Sixteen megabytes of frames to a peer that reads nothing yet: every `send` returns at once
    /// (the socket's buffer holds a few hundred kilobytes; a blocking write stopped there), and
    /// the peer then reads every frame, in order.
    @Test func sendingToAPeerThatDoesNotReadDoesNotBlock() async throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let (writerEnd, readerEnd) = (pair[0], pair[1])
        defer { close(readerEnd) }
        let writer = FrameWriter(descriptor: writerEnd)
        let key = String(repeating: "k", count: 8000)
        let sent = Sent()
        let sender = Thread {
            for _ in 0..<2000 { try? writer.send(.settle(key: key)) }
            sent.done()
        }
        sender.start()
        #expect(try await waitUntil(within: 5) { sent.isDone }, "send blocked while the peer read nothing")
        let received = try await offThePool { () throws -> Int in
            var reader = FrameReader(descriptor: readerEnd)
            var count = 0
            while count < 2000, let message = try reader.receive() {
                guard case .settle(let got) = message, got == key else { break }
                count += 1
            }
            return count
        }
        #expect(received == 2000)
        writer.close()
        // Closed once the queue is written: the peer sees end of file, and a send fails at once.
        let ended = try await offThePool { () throws -> Bool in
            var reader = FrameReader(descriptor: readerEnd)
            return try reader.receive() == nil
        }
        #expect(ended)
        #expect(throws: FrameError.self) { try writer.send(.settle(key: "late")) }
    }
}

private final class Sent: Sendable {
    private let flag = Atomic<Bool>(false)
    var isDone: Bool { flag.load(ordering: .acquiring) }
    func done() { flag.store(true, ordering: .releasing) }
}
