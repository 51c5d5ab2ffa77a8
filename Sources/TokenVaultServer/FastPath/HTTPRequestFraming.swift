import HTTPTypes
import TokenVaultCore

/// Where one HTTP/1.1 request ends in the bytes a connection received, read strictly enough
/// that `TokenFastPath` and NIO's decoder always agree on it.
///
/// Only plainly framed requests are delimited: a request line `METHOD SP target SP HTTP/1.1`
/// (GET, PUT, POST, DELETE, HEAD, OPTIONS or PATCH; a target starting with `/`),
/// header lines `name: value` in visible ASCII, CRLF line ends, at most one decimal
/// `Content-Length`. Anything else (chunked or other transfer codings, `Upgrade`, `CONNECT`,
/// HTTP/1.0, bare LF, obs-fold, non-ASCII header bytes, a head over `maxHeadLength`) is
/// `.unsupported`: the connection stops being parsed here, and the decoder gets every byte and
/// answers, or rejects, exactly as without the fast path.
struct HTTPRequestFraming: Equatable {
    /// Bytes up to and including the blank line after the headers.
    var headLength: Int
    /// `Content-Length`, or 0 without one.
    var bodyLength: Int
    /// The request target's bytes, as an offset range in the head.
    var target: Range<Int>
    var isGet: Bool
    /// A `Connection` header (`close`, which the router honours, or the names of hop-by-hop
    /// headers).
    var hasConnection: Bool
    /// An `Expect` header (`100-continue`: the router's to answer).
    var hasExpect: Bool
    /// No body, no `Connection` or `Expect` header.
    var isPlain: Bool { !hasConnection && !hasExpect && bodyLength == 0 }
    /// The only requests the fast path may answer.
    var isPlainGet: Bool { isGet && isPlain }

    enum Outcome: Equatable {
        case incomplete
        case request(HTTPRequestFraming)
        case unsupported
    }

    /// Far below the decoder's limits (80 KiB), so a head delimited here is never one it refuses
    /// for its size; a longer head is left to the decoder.
    static let maxHeadLength = 8 * 1024
    static let maxHeaderLines = 64

    static func parse(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        var reader = Reader(bytes: bytes)
        // Request line.
        guard let method = reader.token(endingWith: space, allowed: isUppercaseLetter) else {
            return reader.verdict
        }
        guard let target = reader.token(endingWith: space, allowed: isVisible) else { return reader.verdict }
        guard reader.expect(http11) else { return reader.verdict }
        // Only the methods the API has (and HEAD, OPTIONS, PATCH, which it answers 405): the
        // decoder refuses names it does not know, so those requests are its to refuse.
        guard delimitedMethods.contains(where: { bytes[method].elementsEqual($0) }) else { return .unsupported }
        // Origin form only (`/path?query`): the API has no other, and the decoder has its own
        // rules for the rest (`*`, absolute URIs, authorities).
        guard bytes[target.lowerBound] == UInt8(ascii: "/") else { return .unsupported }
        let isGet = bytes[method].elementsEqual(getMethod)

        var bodyLength: Int?
        var (connection, expect) = (false, false)
        var lines = 0
        while true {
            guard reader.available >= 2 else { return reader.verdict }
            if reader.peek(cr) {
                guard reader.expect(crlf) else { return reader.verdict }
                break
            }
            lines += 1
            guard lines <= maxHeaderLines,
                let name = reader.token(endingWith: colon, allowed: HTTPToken.isTokenCharacter),
                let rawValue = reader.token(endingWith: cr, allowed: isFieldValueByte, allowEmpty: true),
                reader.expect(lf)
            else { return lines > maxHeaderLines ? .unsupported : reader.verdict }
            let value = bytes[rawValue].trimmingSpacesAndTabs()
            switch Header(bytes[name]) {
            case .contentLength:
                // Digits and spaces only: the decoder refuses a tab beside the number (found by
                // the differential fuzz test).
                guard bodyLength == nil, !bytes[rawValue].contains(0x09), let length = decimal(value) else {
                    return .unsupported
                }
                bodyLength = length
            case .transferEncoding, .upgrade:
                return .unsupported
            case .connection:
                connection = true
            case .expect:
                expect = true
            case .other:
                break
            }
        }
        guard reader.offset <= maxHeadLength else { return .unsupported }
        return .request(
            HTTPRequestFraming(
                headLength: reader.offset, bodyLength: bodyLength ?? 0, target: target, isGet: isGet,
                hasConnection: connection, hasExpect: expect))
    }

    /// Header names the framing depends on, compared case-insensitively.
    private enum Header {
        case contentLength, transferEncoding, upgrade, connection, expect, other

        init(_ name: Slice<UnsafeRawBufferPointer>) {
            func named(_ lowercase: [UInt8]) -> Bool { name.equalsIgnoringASCIICase(lowercase) }
            self =
                if named(contentLengthName) { .contentLength } else if named(transferEncodingName) {
                    .transferEncoding
                } else if named(upgradeName) { .upgrade } else if named(connectionName) {
                    .connection
                } else if named(expectName) { .expect } else { .other }
        }
    }

    /// A cursor over the received bytes that knows whether running out means "wait for more"
    /// (still within `maxHeadLength`) or "not for this parser".
    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0
        /// Set when a byte broke the rules; otherwise the bytes simply ran out.
        var malformed = false

        var available: Int { bytes.count - offset }
        var verdict: Outcome {
            malformed || bytes.count >= HTTPRequestFraming.maxHeadLength ? .unsupported : .incomplete
        }

        /// Bytes satisfying `allowed` up to `terminator` (consumed, not included); nil when the
        /// bytes run out first or another byte appears.
        mutating func token(endingWith terminator: UInt8, allowed: (UInt8) -> Bool, allowEmpty: Bool = false)
            -> Range<Int>?
        {
            let start = offset
            let limit = min(bytes.count, HTTPRequestFraming.maxHeadLength)
            while offset < limit {
                let byte = bytes[offset]
                if byte == terminator {
                    guard allowEmpty || offset > start else {
                        malformed = true
                        return nil
                    }
                    offset += 1
                    return start..<(offset - 1)
                }
                guard allowed(byte) else {
                    malformed = true
                    return nil
                }
                offset += 1
            }
            return nil
        }

        mutating func expect(_ literal: [UInt8]) -> Bool {
            for byte in literal {
                guard expect(byte) else { return false }
            }
            return true
        }

        mutating func expect(_ byte: UInt8) -> Bool {
            guard offset < bytes.count else { return false }
            guard bytes[offset] == byte else {
                malformed = true
                return false
            }
            offset += 1
            return true
        }

        func peek(_ byte: UInt8) -> Bool { offset < bytes.count && bytes[offset] == byte }
    }
}

private let space = UInt8(ascii: " ")
private let colon = UInt8(ascii: ":")
private let cr = UInt8(ascii: "\r")
private let lf = UInt8(ascii: "\n")
private let crlf: [UInt8] = [cr, lf]
private let http11 = Array("HTTP/1.1\r\n".utf8)
private let getMethod = Array("GET".utf8)
/// Not `CONNECT` (its target is an authority and the connection becomes a tunnel).
private let delimitedMethods = ["GET", "PUT", "POST", "DELETE", "HEAD", "OPTIONS", "PATCH"].map { Array($0.utf8) }
private let contentLengthName = Array("content-length".utf8)
private let transferEncodingName = Array("transfer-encoding".utf8)
private let upgradeName = Array("upgrade".utf8)
private let connectionName = Array("connection".utf8)
private let expectName = Array("expect".utf8)

private func isUppercaseLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) }
private func isVisible(_ byte: UInt8) -> Bool { (0x21...0x7E).contains(byte) }
/// Visible ASCII, space and tab; obs-text (bytes over 0x7E) is left to the decoder.
private func isFieldValueByte(_ byte: UInt8) -> Bool { byte == 0x09 || (0x20...0x7E).contains(byte) }

extension BidirectionalCollection<UInt8> {
    /// Without leading and trailing spaces and tabs (a field value's optional whitespace): for
    /// the framing's header values and the items of a `Connection` header (`ProxyHeaders`).
    func trimmingSpacesAndTabs() -> SubSequence {
        var item = self[...]
        while let first = item.first, first == space || first == 0x09 { item = item.dropFirst() }
        while let last = item.last, last == space || last == 0x09 { item = item.dropLast() }
        return item
    }
}

/// 1 to 15 decimal digits (so no overflow), else nil.
private func decimal(_ digits: Slice<UnsafeRawBufferPointer>) -> Int? {
    guard (1...15).contains(digits.count) else { return nil }
    var value = 0
    for byte in digits {
        guard (0x30...0x39).contains(byte) else { return nil }
        value = value * 10 + Int(byte - 0x30)
    }
    return value
}
