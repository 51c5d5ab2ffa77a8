import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A deliberately simple, blocking HTTP/1.1 client over a Unix socket, for tests that need
/// byte-level control: malformed requests, slow clients, many idle connections.
public final class UnixSocketConnection {
    public let descriptor: Int32
    private var buffered: [UInt8] = []

    public init(path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw SocketTestError("socket() failed: \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            path.utf8CString.withUnsafeBytes {
                raw.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(raw.count)))
            }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            // Not closed here: the object is fully initialised, so deinit runs and closes it. A
            // second close could close a descriptor another thread was given meanwhile (NIO's, in
            // the test OAuth server: a crash in epoll_ctl with EBADF).
            let code = errno
            throw SocketTestError("connect(\(path)) failed: \(String(cString: strerror(code)))")
        }
    }

    deinit { close(descriptor) }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw SocketTestError("send failed: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Reads `count` responses, in order (pipelined requests' answers); throws if the peer closes
    /// before the last.
    public func readResponses(_ count: Int, timeout: Double = 10) throws -> [RawHTTPResponse] {
        try (0..<count).map { _ in
            guard let response = try readResponse(timeout: timeout) else { throw SocketTestError("closed early") }
            return response
        }
    }

    /// Reads one response (Content-Length or chunked body); nil if the peer closed first. With
    /// `firstLine`, a chunked body is read only up to its first newline (for NDJSON streams
    /// that never end by themselves).
    public func readResponse(timeout: Double = 10, firstLine: Bool = false) throws -> RawHTTPResponse? {
        guard
            let headerEnd = try fill(until: { $0.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound }, timeout: timeout)
        else { return nil }
        let head = String(decoding: buffered[..<headerEnd], as: UTF8.self)
        buffered.removeFirst(headerEnd)
        var lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw SocketTestError("bad status line") }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        var body: [UInt8] = []
        if let length = headers["content-length"].flatMap(Int.init) {
            guard try fill(until: { $0.count >= length ? length : nil }, timeout: timeout) != nil else {
                throw SocketTestError("body cut short")
            }
            body = Array(buffered.prefix(length))
            buffered.removeFirst(length)
        } else if headers["transfer-encoding"]?.lowercased() == "chunked" {
            while true {
                guard
                    let lineEnd = try fill(
                        until: { $0.firstRange(of: Array("\r\n".utf8))?.upperBound }, timeout: timeout),
                    let size = Int(String(decoding: buffered[..<(lineEnd - 2)], as: UTF8.self), radix: 16)
                else { throw SocketTestError("bad chunk") }
                buffered.removeFirst(lineEnd)
                guard try fill(until: { $0.count >= size + 2 ? size + 2 : nil }, timeout: timeout) != nil else {
                    throw SocketTestError("chunk cut short")
                }
                body += buffered.prefix(size)
                buffered.removeFirst(size + 2)
                if size == 0 { break }
                if firstLine, let newline = body.firstIndex(of: UInt8(ascii: "\n")) {
                    body = Array(body[...newline])
                    break
                }
            }
        }
        return RawHTTPResponse(status: status, headers: headers, body: body)
    }

    /// Reads until `marker` has arrived and drops everything up to it (the end of a chunked
    /// stream: `"0\r\n\r\n"`); false when the peer closed first, throws on timeout.
    public func skip(through marker: String, timeout: Double) throws -> Bool {
        let bytes = Array(marker.utf8)
        guard let end = try fill(until: { $0.firstRange(of: bytes)?.upperBound }, timeout: timeout) else {
            return false
        }
        buffered.removeFirst(end)
        return true
    }

    /// Whether the server closes the connection within `timeout` seconds.
    public func waitForClose(timeout: Double) -> Bool {
        (try? fill(until: { _ in nil }, timeout: timeout)) == nil && closed
    }

    private var closed = false

    /// Reads until `condition` yields a value; nil when the peer closed; throws on timeout.
    private func fill(until condition: ([UInt8]) -> Int?, timeout: Double) throws -> Int? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let found = condition(buffered) { return found }
            if closed { return nil }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw SocketTestError("timed out") }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(remaining * 1000)) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = recv(descriptor, &chunk, chunk.count, 0)
            if count <= 0 {
                closed = true
                return condition(buffered)
            }
            buffered += chunk.prefix(count)
        }
    }
}

/// Calls `body` with a `sockaddr_un` for `path` (truncated to the 107 bytes the kernel allows).
public func withUnixSocketAddress<Result>(
    _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws -> Result
) rethrows -> Result {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        path.utf8CString.withUnsafeBytes {
            raw.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(raw.count - 1)))
        }
    }
    return try withUnsafePointer(to: &address) {
        try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            try body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
}

public struct RawHTTPResponse: Sendable {
    public let status: Int
    public let headers: [String: String]
    public let body: [UInt8]
    public var text: String { String(decoding: body, as: UTF8.self) }

    public func json() -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }
}

public struct SocketTestError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// One-shot requests.
public enum UnixSocketHTTP {
    public static func request(
        _ socketPath: String, _ method: String, _ target: String, body: String? = nil, headers: [String: String] = [:]
    ) throws -> RawHTTPResponse {
        let connection = try UnixSocketConnection(path: socketPath)
        var head = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        try connection.send(head + "\r\n" + (body ?? ""))
        guard let response = try connection.readResponse() else { throw SocketTestError("connection closed") }
        return response
    }
}

/// Runs blocking test I/O on a thread of its own, off the Swift concurrency pool (and off
/// Dispatch's small worker pool), so an in-process server sharing those pools is never starved
/// by its own test client.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// Waits on this thread for `body`, run as a task: for a test whose blocking code (a transaction's
/// body, which runs on a thread of the store's own) must make an async call meanwhile.
public func waitOnThisThread<T: Sendable>(for body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let outcome = Mutex<Result<T, any Error>?>(nil)
    Task {
        let result: Result<T, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return try outcome.withLock { $0! }.get()
}
