import NIOCore
import TokenVaultCore

/// An answer's body with every copy of the call's tokens overwritten (`TokenRedaction`), piece by
/// piece as it streams.
struct RedactedBody<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element == ByteBuffer {
    typealias Element = ByteBuffer

    let base: Base
    let tokens: [SecretBytes]

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        var redaction: TokenRedaction
        var ended = false

        mutating func next() async throws -> ByteBuffer? {
            while !ended {
                guard let piece = try await base.next() else {
                    ended = true
                    return redaction.finish()
                }
                let passed = redaction.pass(piece)
                if passed.readableBytes > 0 { return passed }
            }
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), redaction: TokenRedaction(tokens: tokens))
    }
}
