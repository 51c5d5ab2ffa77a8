import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The one redirect a terminal sign-in waits for: a listener on 127.0.0.1 at a port the kernel
/// picks (RFC 8252 section 7.3: the server admits any port of a registered loopback URI). Only a
/// request for `path` is taken; anything else a browser asks (a favicon) gets 404. Loopback only,
/// one connection at a time, closed after its answer.
final class LoopbackCallback {
    let port: UInt16
    let path: String
    private let listener: Int32

    init(path: String) throws {
        self.path = path
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw LoginFailure("cannot open a socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(listener, 8) == 0 else {
            let problem = String(cString: strerror(errno))
            close(listener)
            throw LoginFailure("cannot listen on 127.0.0.1: \(problem)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        self.listener = listener
    }

    deinit { close(listener) }

    /// `http://127.0.0.1:<port><path>`: the redirect URI of this sign-in.
    var redirectURI: String { "http://127.0.0.1:\(port)\(path)" }

    /// A browser's request for `path`: the URL it asked for, and its connection, to be answered.
    struct Callback {
        let url: String
        let connection: Int32

        /// Answers the browser with a short page and closes the connection.
        func answer(ok: Bool, _ message: String) {
            let title = ok ? "Signed in" : "Sign-in failed"
            let page = """
                <!doctype html><html><head><meta charset="utf-8"><title>\(title)</title></head>
                <body><h1>\(title)</h1><p>\(Self.escaped(message))</p><p>You can close this window.</p></body></html>
                """
            LoopbackCallback.write(connection, status: ok ? "200 OK" : "400 Bad Request", page)
            close(connection)
        }

        static func escaped(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;")
        }
    }

    /// Waits until `deadline` for the browser's request for `path`.
    func wait(until deadline: Date) throws -> Callback {
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else {
                throw LoginFailure("no redirect came back before the --timeout; start the sign-in again")
            }
            var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(min(remaining, 1) * 1000)) > 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            guard let target = Self.requestTarget(connection), target.hasPrefix("/") else {
                close(connection)
                continue
            }
            let requested = String(target.prefix { $0 != "?" })
            guard requested == path else {
                Self.write(connection, status: "404 Not Found", "not found")
                close(connection)
                continue
            }
            return Callback(url: "http://127.0.0.1:\(port)" + target, connection: connection)
        }
    }

    /// The target of an HTTP request's first line (`GET /callback?code=… HTTP/1.1`), its head read
    /// to the blank line (a connection closed with bytes unread is reset, and the browser would
    /// show that instead of the page) within ten seconds and 16 KiB; nil for anything else.
    private static func requestTarget(_ connection: Int32) -> String? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(10)
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        func headIsWhole() -> Bool {
            received.count >= 4 && (0...(received.count - 4)).contains { received[$0..<$0 + 4].elementsEqual(end) }
        }
        while received.count < 16 * 1024, !headIsWhole() {
            var poller = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0, poll(&poller, 1, Int32(remaining * 1000)) > 0 else { return nil }
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else { return nil }
            received += buffer[..<count]
        }
        let line = String(
            decoding: received.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        let parts = line.split(separator: " ")
        guard parts.count == 3, parts[0] == "GET", parts[2].hasPrefix("HTTP/1.") else { return nil }
        return String(parts[1])
    }

    fileprivate static func write(_ connection: Int32, status: String, _ body: String) {
        let bytes = Array(
            ("HTTP/1.1 \(status)\r\nContent-Type: text/html; charset=utf-8\r\nCache-Control: no-store\r\n"
                + "Referrer-Policy: no-referrer\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
                + body).utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes {
                send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { return }
            sent += count
        }
    }
}
