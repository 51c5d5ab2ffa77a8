import NIOCore
import Synchronization
import TokenVaultProviders

/// A body passed through a piece at a time, never collected: more than `limit` bytes end it with
/// `CappedBody.TooLarge`, a piece after `deadline` with `CappedBody.DeadlinePassed` (the caller
/// sees the answer cut short). `slot` is released when the body
/// ends, fails or is dropped unread (a proxied call holds its caller's slot until its answer has
/// streamed back).
struct CappedBody<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element == ByteBuffer {
    typealias Element = ByteBuffer

    struct TooLarge: Error {
        let limit: Int
    }

    struct DeadlinePassed: Error {}

    let base: Base
    let limit: Int
    var slot: ProxyCallSlot?
    var deadline: NIODeadline?

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        var remaining: Int
        let limit: Int
        let slot: ProxyCallSlot?
        let deadline: NIODeadline?

        mutating func next() async throws -> ByteBuffer? {
            do {
                guard let buffer = try await base.next() else {
                    slot?.release()
                    return nil
                }
                remaining -= buffer.readableBytes
                guard remaining >= 0 else { throw TooLarge(limit: limit) }
                if let deadline, NIODeadline.now() > deadline { throw DeadlinePassed() }
                return buffer
            } catch {
                slot?.release()
                throw error
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), remaining: limit, limit: limit, slot: slot, deadline: deadline)
    }
}

/// One of a caller's proxied calls in flight (`limits.max_proxy_calls_per_uid`): released once,
/// when its answer has been streamed back, when the call fails, or when nothing holds it any more.
/// The upstream client the call uses is held as long (`hold`), so it is not shut down while the
/// answer streams.
final class ProxyCallSlot: Sendable {
    private let onRelease: @Sendable () -> Void
    private let state = Mutex<(released: Bool, use: UpstreamClients.Use?)>((false, nil))

    init(onRelease: @escaping @Sendable () -> Void) { self.onRelease = onRelease }

    /// Keeps `use` until the slot is released (ends it now if it was).
    func hold(_ use: UpstreamClients.Use) {
        let released = state.withLock { state in
            if !state.released { state.use = use }
            return state.released
        }
        if released { use.end() }
    }

    func release() {
        let (first, use) = state.withLock { state in
            defer { (state.released, state.use) = (true, nil) }
            return (!state.released, state.use)
        }
        use?.end()
        if first { onRelease() }
    }

    deinit { release() }
}
