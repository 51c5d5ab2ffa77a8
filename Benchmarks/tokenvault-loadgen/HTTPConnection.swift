#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

enum ConnectionError: Error, CustomStringConvertible {
    case system(String, Int32)
    case closed
    case malformed(String)

    var description: String {
        switch self {
        case .system(let call, let code): "\(call): \(String(cString: strerror(code)))"
        case .closed: "the server closed the connection"
        case .malformed(let what): "malformed response: \(what)"
        }
    }
}

/// One keep-alive HTTP/1.1 connection over a Unix socket, with blocking system calls and just
/// enough response parsing for the benchmark: status code, `Content-Length` (or chunked), and
/// `Connection: close`. Not thread-safe: each load thread owns one.
final class HTTPConnection {
    private let socketPath: String
    private var descriptor: Int32 = -1
    private var buffer: UnsafeMutableRawBufferPointer
    /// Received bytes not yet consumed are `buffer[start..<end]`.
    private var start = 0
    private var end = 0
    /// The body of the last response (for diagnostics only).
    private(set) var lastBody: [UInt8] = []
    var keepBody = false

    init(socketPath: String) throws {
        self.socketPath = socketPath
        buffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        try establish()
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
        buffer.deallocate()
    }

    func reconnect() throws {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
        start = 0
        end = 0
        try establish()
    }

    private func establish() throws {
        descriptor = try connectUnix(socketPath)
    }

    /// Sends `request` (a complete request with headers) and returns the response's status
    /// once its whole body has arrived.
    func exchange(_ request: UnsafeRawBufferPointer) throws -> Int {
        try sendRequest(request)
        return try readResponse()
    }

    private func readResponse() throws -> Int {
        // Headers: up to the blank line (they are small and nearly always arrive in one read).
        var headerEnd = find(crlfcrlf, from: start)
        while headerEnd == nil {
            try fill()
            headerEnd = find(crlfcrlf, from: start)
        }
        let head = try parseHead(upTo: headerEnd!)
        start = headerEnd! + 4
        if keepBody { lastBody.removeAll(keepingCapacity: true) }
        if head.chunked {
            try readChunkedBody()
        } else if let contentLength = head.contentLength {
            try consume(contentLength)
        } else {
            throw ConnectionError.malformed("neither Content-Length nor chunked encoding")
        }
        if head.closeAfter { try reconnect() }
        return head.status
    }

    // MARK: Event-driven use (one thread polling many connections)

    /// The socket, for `poll`: when it is readable, `receiveAvailable()` does not block.
    var fileDescriptor: Int32 { descriptor }

    /// Sends `request` (a complete request with headers) without waiting for the response.
    func sendRequest(_ request: UnsafeRawBufferPointer) throws {
        var sent = 0
        while sent < request.count {
            let count = send(descriptor, request.baseAddress! + sent, request.count - sent, Int32(MSG_NOSIGNAL))
            if count < 0 {
                if errno == EINTR { continue }
                throw ConnectionError.system("send", errno)
            }
            sent += count
        }
    }

    /// One `recv` of what has arrived.
    func receiveAvailable() throws { try fill() }

    /// The status of the response now complete in the buffer (consumed), or nil while it is
    /// incomplete. Only `Content-Length` framing, and no `Connection: close` (which would need
    /// a new socket): the token and baseline responses.
    func takeResponse() throws -> Int? {
        guard let headerEnd = find(crlfcrlf, from: start) else { return nil }
        let head = try parseHead(upTo: headerEnd)
        guard !head.chunked, !head.closeAfter, let length = head.contentLength else {
            throw ConnectionError.malformed(
                "a chunked or closing response (the event-driven client needs Content-Length)")
        }
        let responseEnd = headerEnd + 4 + length
        guard responseEnd <= end else { return nil }
        start = responseEnd
        return head.status
    }

    private func parseHead(upTo headerEnd: Int) throws -> (
        status: Int, contentLength: Int?, chunked: Bool, closeAfter: Bool
    ) {
        let head = UnsafeRawBufferPointer(rebasing: buffer[start..<headerEnd])
        guard head.count >= 12, head.starts(with: "HTTP/1.".utf8) else {
            throw ConnectionError.malformed("no status line")
        }
        var status = 0
        for digit in head[(head.startIndex + 9)..<(head.startIndex + 12)] {
            guard (48...57).contains(digit) else { throw ConnectionError.malformed("status code") }
            status = status * 10 + Int(digit - 48)
        }
        var contentLength: Int?
        var chunked = false
        var closeAfter = false
        // Header lines, compared byte-wise without allocating: this runs once per request.
        var lineStart = head.startIndex
        while let newline = head[lineStart...].firstIndex(of: 10) {
            lineStart = newline + 1
            let lineEnd = head[lineStart...].firstIndex(of: 13) ?? head.endIndex
            let line = UnsafeRawBufferPointer(rebasing: head[lineStart..<lineEnd])
            if let value = headerValue(line, named: contentLengthName) {
                var length = 0
                for byte in value where (48...57).contains(byte) { length = length * 10 + Int(byte - 48) }
                contentLength = length
            } else if let value = headerValue(line, named: transferEncodingName) {
                chunked = contains(value, chunkedToken)
            } else if let value = headerValue(line, named: connectionName) {
                closeAfter = contains(value, closeToken)
            }
        }
        return (status, contentLength, chunked, closeAfter)
    }

    /// Drops (or keeps, for diagnostics) the next `count` body bytes.
    private func consume(_ count: Int) throws {
        var remaining = count
        while remaining > 0 {
            if start == end { try fill() }
            let take = min(remaining, end - start)
            if keepBody {
                lastBody.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[start..<(start + take)]))
            }
            start += take
            remaining -= take
        }
    }

    private func readChunkedBody() throws {
        while true {
            var lineEnd = find(crlf, from: start)
            while lineEnd == nil {
                try fill()
                lineEnd = find(crlf, from: start)
            }
            let sizeText = String(decoding: UnsafeRawBufferPointer(rebasing: buffer[start..<lineEnd!]), as: UTF8.self)
            guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16) else {
                throw ConnectionError.malformed("chunk size")
            }
            start = lineEnd! + 2
            if size == 0 {
                // Trailers (none expected) end with an empty line.
                while true {
                    var trailerEnd = find(crlf, from: start)
                    while trailerEnd == nil {
                        try fill()
                        trailerEnd = find(crlf, from: start)
                    }
                    let empty = trailerEnd! == start
                    start = trailerEnd! + 2
                    if empty { return }
                }
            }
            try consume(size)
            try consume(2)  // CRLF after the chunk data (never kept: it is not body)
        }
    }

    /// Reads more bytes, compacting the buffer first when the free tail is small.
    private func fill() throws {
        if start == end {
            start = 0
            end = 0
        } else if buffer.count - end < 4096 {
            let pending = end - start
            guard pending < buffer.count else { throw ConnectionError.malformed("headers over 64 KiB") }
            buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: pending)
            start = 0
            end = pending
        }
        while true {
            let count = recv(descriptor, buffer.baseAddress! + end, buffer.count - end, 0)
            if count > 0 {
                end += count
                return
            }
            if count == 0 { throw ConnectionError.closed }
            if errno == EINTR { continue }
            throw ConnectionError.system("recv", errno)
        }
    }

    private func find(_ needle: [UInt8], from: Int) -> Int? {
        guard end - from >= needle.count else { return nil }
        let first = needle[0]
        var index = from
        let last = end - needle.count
        while index <= last {
            if buffer[index] == first {
                var matched = true
                for offset in 1..<needle.count where buffer[index + offset] != needle[offset] {
                    matched = false
                    break
                }
                if matched { return index }
            }
            index += 1
        }
        return nil
    }
}

private let crlf: [UInt8] = [13, 10]
private let crlfcrlf: [UInt8] = [13, 10, 13, 10]
private let contentLengthName = Array("content-length".utf8)
private let transferEncodingName = Array("transfer-encoding".utf8)
private let connectionName = Array("connection".utf8)
private let chunkedToken = Array("chunked".utf8)
private let closeToken = Array("close".utf8)

/// ASCII lower case.
@inline(__always)
private func lowered(_ byte: UInt8) -> UInt8 { (65...90).contains(byte) ? byte | 0x20 : byte }

/// The value of header `line` when its name is `name` (lower case), else nil.
private func headerValue(_ line: UnsafeRawBufferPointer, named name: [UInt8]) -> UnsafeRawBufferPointer? {
    guard line.count > name.count, line[line.startIndex + name.count] == UInt8(ascii: ":") else { return nil }
    for (offset, expected) in name.enumerated() where lowered(line[line.startIndex + offset]) != expected {
        return nil
    }
    return UnsafeRawBufferPointer(rebasing: line[(line.startIndex + name.count + 1)...])
}

/// Whether `value` contains `token` (lower case), ignoring case.
private func contains(_ value: UnsafeRawBufferPointer, _ token: [UInt8]) -> Bool {
    guard value.count >= token.count else { return false }
    for offset in 0...(value.count - token.count) {
        var matched = true
        for (index, expected) in token.enumerated() where lowered(value[value.startIndex + offset + index]) != expected
        {
            matched = false
            break
        }
        if matched { return true }
    }
    return false
}
