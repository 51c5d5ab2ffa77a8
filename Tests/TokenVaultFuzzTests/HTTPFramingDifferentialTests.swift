import NIOCore
import NIOEmbedded
import NIOHTTP1
import PropertyBased
import Testing

@testable import TokenVaultServer

/// The fast path's framing (`HTTPRequestFraming`) against NIO's `HTTPRequestDecoder` on the same
/// bytes. The fast path answers some requests itself and hands the others, and everything after
/// an input it does not understand, to the decoder; so wherever it delimits requests, the decoder
/// must see the very same requests (method, target, body length) ending at the very same byte,
/// or a request could be smuggled past one of them.
@Suite struct HTTPFramingDifferentialTests {
    /// One request as either parser saw it.
    struct Seen: Equatable, CustomStringConvertible {
        var method: String
        var target: String
        var bodyLength: Int
        var ended: Bool
        var description: String { "\(method) \(target) body \(bodyLength)\(ended ? "" : " (unfinished)")" }
    }

    enum Stop: Equatable { case end, incomplete, unsupported }

    /// The requests the fast path delimits, and why it stopped.
    static func framed(_ bytes: [UInt8]) -> (requests: [Seen], stop: Stop) {
        var requests: [Seen] = []
        var offset = 0
        while offset < bytes.count {
            let rest = Array(bytes[offset...])
            let outcome = rest.withUnsafeBytes { HTTPRequestFraming.parse($0) }
            switch outcome {
            case .incomplete: return (requests, .incomplete)
            case .unsupported: return (requests, .unsupported)
            case .request(let framing):
                let method = String(decoding: rest.prefix { $0 != 0x20 }, as: UTF8.self)
                let target = String(decoding: rest[framing.target], as: UTF8.self)
                let available = rest.count - framing.headLength
                let ended = available >= framing.bodyLength
                requests.append(
                    Seen(
                        method: method, target: target, bodyLength: min(available, framing.bodyLength), ended: ended))
                guard ended else { return (requests, .incomplete) }
                offset += framing.headLength + framing.bodyLength
            }
        }
        return (requests, .end)
    }

    /// The requests NIO's decoder reads from the same bytes, and whether it refused them.
    static func decoded(_ bytes: [UInt8]) -> (requests: [Seen], failed: Bool) {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        try! channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder()))
        var failed = false
        do {
            try channel.writeInbound(channel.allocator.buffer(bytes: bytes))
        } catch {
            failed = true
        }
        var requests: [Seen] = []
        while let part = try? channel.readInbound(as: HTTPServerRequestPart.self) {
            switch part {
            case .head(let head):
                requests.append(Seen(method: head.method.rawValue, target: head.uri, bodyLength: 0, ended: false))
            case .body(let body): requests[requests.count - 1].bodyLength += body.readableBytes
            case .end: requests[requests.count - 1].ended = true
            }
        }
        return (requests, failed)
    }

    static func check(_ bytes: [UInt8], label: String) {
        let ours = framed(bytes)
        let nio = decoded(bytes)
        let shown = String(decoding: bytes.prefix(300), as: UTF8.self).debugDescription
        // Every request the fast path delimits, the decoder reads the same, ending at the same byte.
        for (index, request) in ours.requests.enumerated() {
            guard index < nio.requests.count else {
                Issue.record(
                    "\(label): the fast path delimits \(request), the decoder does not (failed: \(nio.failed)) in \(shown)"
                )
                return
            }
            #expect(
                nio.requests[index] == request,
                "\(label): fast path \(request), decoder \(nio.requests[index]) in \(shown)")
        }
        // Where the fast path waits for more, the decoder has not read another request either.
        if ours.stop == .incomplete || ours.stop == .end {
            #expect(
                nio.requests.count == ours.requests.count,
                "\(label): the decoder read \(nio.requests.dropFirst(ours.requests.count)) beyond the fast path (stopped: \(ours.stop)) in \(shown)"
            )
        }
    }

    // MARK: - Inputs

    static let methods = ["GET", "PUT", "POST", "DELETE", "HEAD", "OPTIONS", "get", "G ET", "CONNECT", "PATCH", "XYZ"]
    static let targets = [
        "/", "/v1/credentials/a/b/token", "/v1/credentials/a/b/token?min_ttl=60", "*", "http://x/y", "/a%20b", "/a b",
        "/\u{7F}", "/é", "", "/a?b=c&d", "/" + String(repeating: "a", count: 9000),
    ]
    static let versions = ["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "http/1.1", "HTTP/1.1 ", "HTTP/1.10", "HTTP/1"]
    static let headers = [
        "Host: localhost", "Content-Length: 0", "Content-Length: 2", "Content-Length: 5", "Content-Length:  2 ",
        "Content-Length: +2", "Content-Length: -1", "Content-Length: 02", "Content-Length: 2, 2",
        "Content-Length: 99999999999999999999", "Content-Length:", "content-length: 3", "Transfer-Encoding: chunked",
        "Transfer-Encoding: identity", "Connection: close", "Connection: keep-alive", "Expect: 100-continue",
        "Upgrade: h2c", "X-Empty:", "X-Tab:\tvalue", " folded", "Bad Name: x", "X: \u{00FF}", "X-Nul: a\u{0}b", ":",
        "Accept: */*",
    ]
    static let lineEnds = ["\r\n", "\r\n", "\r\n", "\n", "\r"]

    /// A request built from the lists above, sometimes two in a row.
    static let requests: Generator<[UInt8], Shrink.None<[UInt8]>> = Generator { rng in
        func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &rng)] }
        var bytes: [UInt8] = []
        for _ in 0..<Int.random(in: 1...2, using: &rng) {
            let end = Int.random(in: 0..<6, using: &rng) == 0 ? pick(lineEnds) : "\r\n"
            var text = "\(pick(methods)) \(pick(targets)) \(pick(versions))\(end)"
            for _ in 0..<Int.random(in: 0...5, using: &rng) { text += pick(headers) + end }
            text += end
            bytes += Array(text.utf8)
            bytes += (0..<Int.random(in: 0...6, using: &rng)).map { _ in UInt8(ascii: "x") }
        }
        return bytes
    }

    @Test func theSeedCorpusFramesAsTheDecoderReadsIt() {
        let corpus = FuzzCorpus.inputs("http")
        #expect(corpus.count > 20)
        for (name, bytes) in corpus {
            Self.check(bytes, label: name)
            // Every prefix too: a request arrives in pieces.
            for cut in stride(from: 1, to: bytes.count, by: 3) {
                Self.check(Array(bytes.prefix(cut)), label: "\(name)[..<\(cut)]")
            }
        }
    }

    @Test func generatedRequestsFrameAsTheDecoderReadsThem() async {
        await propertyCheck(count: FuzzBudget.count, input: Self.requests) { Self.check($0, label: "generated") }
    }

    @Test func mutatedRequestsFrameAsTheDecoderReadsThem() async {
        let seeds = FuzzCorpus.inputs("http").map(\.bytes)
        await propertyCheck(count: FuzzBudget.count, input: Mutator.generator(seeds: seeds)) {
            Self.check($0, label: "mutated")
        }
    }
}
