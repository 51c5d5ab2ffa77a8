import Testing

@testable import TokenVaultServer

/// The fast path's request delimiting: exactly where a plainly framed request ends, "wait for
/// more" for a partial one, and "leave the connection to the decoder" for everything else.
@Suite struct HTTPRequestFramingTests {
    static func parse(_ text: String) -> HTTPRequestFraming.Outcome {
        Array(text.utf8).withUnsafeBytes { HTTPRequestFraming.parse($0) }
    }

    static func request(_ text: String) throws -> HTTPRequestFraming {
        guard case .request(let request) = parse(text) else {
            Issue.record("not delimited: \(text.debugDescription)")
            throw CancellationError()
        }
        return request
    }

    @Test func delimitsAPlainGetAndFindsItsTarget() throws {
        let head = "GET /v1/credentials/pay/alice/token?min_ttl=5 HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n"
        let request = try Self.request(head + "GET /next")
        #expect(request.headLength == head.utf8.count)
        #expect(request.bodyLength == 0 && request.isPlainGet)
        let target = Array(head.utf8)[request.target]
        #expect(String(decoding: target, as: UTF8.self) == "/v1/credentials/pay/alice/token?min_ttl=5")
    }

    @Test func readsContentLengthAndMarksRequestsTheFastPathMustNotAnswer() throws {
        let put = try Self.request("PUT /v1/credentials/a/b HTTP/1.1\r\ncontent-LENGTH:  12 \r\n\r\n{\"a\":1}")
        #expect(put.bodyLength == 12 && !put.isPlainGet)
        #expect(try Self.request("GET /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n").isPlainGet)
        #expect(try !Self.request("GET /x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc").isPlainGet)
        #expect(try !Self.request("GET /x HTTP/1.1\r\nConnection: close\r\n\r\n").isPlainGet)
        #expect(try !Self.request("GET /x HTTP/1.1\r\nExpect: 100-continue\r\n\r\n").isPlainGet)
        #expect(try !Self.request("HEAD /x HTTP/1.1\r\n\r\n").isPlainGet)
        #expect(try Self.request("GET /x HTTP/1.1\r\nX-Empty:\r\n\r\n").isPlainGet)
    }

    @Test(arguments: [
        "", "G", "GET", "GET /v1/credentials/pay/alice/token", "GET /x HTTP/1.", "GET /x HTTP/1.1\r",
        "GET /x HTTP/1.1\r\n", "GET /x HTTP/1.1\r\nHost: local", "GET /x HTTP/1.1\r\nHost: localhost\r\n",
        "GET /x HTTP/1.1\r\nHost: localhost\r\n\r",
    ])
    func waitsForTheRestOfAHead(prefix: String) {
        #expect(Self.parse(prefix) == .incomplete)
    }

    /// Each of these leaves the whole connection to NIO's decoder, which accepts or rejects it
    /// as it would without the fast path.
    @Test(arguments: [
        "get /x HTTP/1.1\r\n\r\n", "GET /x HTTP/1.0\r\n\r\n", "GET  /x HTTP/1.1\r\n\r\n", "GET /x HTTP/1.1\n\n",
        "GET /a b HTTP/1.1\r\n\r\n", "GET /x HTTP/1.1\r\nHost : x\r\n\r\n", "GET /x HTTP/1.1\r\n Host: x\r\n\r\n",
        "GET /x HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", "GET /x HTTP/1.1\r\nX: caf\u{e9}\r\n\r\n",
        "GET /x HTTP/1.1\r\nX: a\rb\r\n\r\n", "GET /x HTTP/1.1\r\nNoColon\r\n\r\n",
        "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nab",
        "POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "POST /x HTTP/1.1\r\nContent-Length: 1,1\r\n\r\n",
        "POST /x HTTP/1.1\r\nContent-Length: 1234567890123456\r\n\r\n",
        "GET /x HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", "CONNECT host:443 HTTP/1.1\r\n\r\n",
        "\r\nGET /x HTTP/1.1\r\n\r\n",
    ])
    func leavesEverythingOddToTheDecoder(text: String) {
        #expect(Self.parse(text) == .unsupported)
    }

    @Test func leavesOverlongHeadsToTheDecoder() {
        let filler = String(repeating: "a", count: HTTPRequestFraming.maxHeadLength)
        #expect(Self.parse("GET /x HTTP/1.1\r\nX-Filler: \(filler)") == .unsupported)
        #expect(Self.parse("GET /\(filler) HTTP/1.1\r\n\r\n") == .unsupported)
        let lines = String(repeating: "X-A: b\r\n", count: HTTPRequestFraming.maxHeaderLines + 1)
        #expect(Self.parse("GET /x HTTP/1.1\r\n\(lines)\r\n") == .unsupported)
        let justEnough = String(repeating: "X-A: b\r\n", count: HTTPRequestFraming.maxHeaderLines)
        #expect(Self.parse("GET /x HTTP/1.1\r\n\(justEnough)\r\n") != .unsupported)
    }
}
