import NIOCore
import TokenVaultCore

/// Overwrites with `*`, in an answer's body as it streams, every copy of a token the call carried,
/// as it was sent or percent-encoded (any byte escaped, in either case), so that an upstream that
/// echoes its request never hands a `credential:use` caller the token. The body keeps its length
/// (`Content-Length` stays true). Bytes that could begin a token are held back until the next
/// piece shows whether they do, and go out (redacted) at the end if it never comes: only they wait, so a
/// streamed answer is not delayed otherwise. Pure.
struct TokenRedaction {
    private let tokens: [SecretBytes]
    /// The bytes a match can begin with: each token's first, and `%`. Every other position is
    /// passed over with one comparison.
    private let firstBytes: [UInt8]
    /// Bytes of earlier pieces that may begin a token.
    private var held: [UInt8] = []

    init(tokens: [SecretBytes]) {
        self.tokens = tokens.filter { $0.count > 0 }
        firstBytes = Array(Set(self.tokens.map { $0.withUnsafeBytes { $0[0] } } + [UInt8(ascii: "%")]))
    }

    /// What of `piece` (after what was held) can be passed on now, redacted.
    mutating func pass(_ piece: ByteBuffer) -> ByteBuffer {
        guard !tokens.isEmpty else { return piece }
        var text = held
        text.append(contentsOf: piece.readableBytesView)
        let keep = redact(&text, final: false)
        held = Array(text.suffix(keep))
        return ByteBuffer(bytes: text.dropLast(keep))
    }

    /// What was held at the end of the body, redacted: no token can continue it any more.
    mutating func finish() -> ByteBuffer? {
        guard !held.isEmpty else { return nil }
        var text = held
        held = []
        _ = redact(&text, final: true)
        return ByteBuffer(bytes: text)
    }

    /// Whether `value` holds a token, as sent or percent-encoded in any case (a `Location` or `Link`
    /// URL writes `+`, `/` and `=` as `%2B`, `%2F` and `%3D`). A header that does is dropped whole:
    /// unlike a body, its length is not the point, and a starred URL is no use to the caller.
    func isFound(in value: String) -> Bool {
        guard !tokens.isEmpty else { return false }
        var value = value
        return value.withUTF8 { text in
            text.indices.contains { start in
                guard firstBytes.contains(text[start]) else { return false }
                if case .whole = match(in: text, at: start, final: true) { return true }
                return false
            }
        }
    }

    /// Overwrites every token in `text`; returns how many bytes at its end may begin one that
    /// continues in the next piece (none when `final`).
    private func redact(_ text: inout [UInt8], final: Bool) -> Int {
        text.withUnsafeMutableBufferPointer { bytes in
            var start = 0
            while start < bytes.count {
                guard firstBytes.contains(bytes[start]) else {
                    start += 1
                    continue
                }
                switch match(in: UnsafeBufferPointer(bytes), at: start, final: final) {
                case .whole(let end):
                    for index in start..<end { bytes[index] = UInt8(ascii: "*") }
                    start = end
                case .cut:
                    return bytes.count - start
                case .none:
                    start += 1
                }
            }
            return 0
        }
    }

    /// As sent, then with escapes decoded.
    private static let forms = [false, true]

    enum Match: Equatable {
        case none
        /// A token ends at `end` (exclusive).
        case whole(end: Int)
        /// The text ends inside what may be a token.
        case cut
    }

    /// Whether a token (as sent, or with escapes decoded) begins at `start`: `.cut` when one may
    /// continue past the end of `text` (unless `final`), which is checked first, since a longer
    /// token may hold a shorter one; else the longest that ends in it.
    func match(in text: UnsafeBufferPointer<UInt8>, at start: Int, final: Bool) -> Match {
        var longest: Int?
        var cut = false
        for token in tokens {
            token.withUnsafeBytes { secret in
                for decoding in Self.forms {
                    var (index, matched) = (start, 0)
                    reading: while matched < secret.count {
                        guard index < text.count else {
                            cut = true
                            break reading
                        }
                        var (value, width) = (text[index], 1)
                        if decoding, value == UInt8(ascii: "%") {
                            guard index + 2 < text.count else {
                                cut = true
                                break reading
                            }
                            guard let high = HexDigit.value(text[index + 1]), let low = HexDigit.value(text[index + 2])
                            else { break reading }
                            (value, width) = (high << 4 | low, 3)
                        }
                        guard value == secret[matched] else { break reading }
                        index += width
                        matched += 1
                    }
                    if matched == secret.count { longest = max(longest ?? 0, index) }
                }
            }
        }
        if cut && !final { return .cut }
        return longest.map { .whole(end: $0) } ?? .none
    }
}
