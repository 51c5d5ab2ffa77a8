#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `hold`: opens many connections and keeps them open, to measure what they cost the daemon
/// (its resident memory with thousands of idle connections and watch streams). Idle connections
/// send nothing; each watch stream asks for one credential's `watch` and must get its 200 and
/// first line. Prints `READY ...` once everything is open, keeps it all open for `seconds`
/// (reading what the streams send: heartbeats), then prints `RESULT ...` with how many of each
/// were still open.
struct HoldOptions {
    var socketPath: String
    var idle: Int
    var watches: Int
    var credentials: Int
    var namespace: String
    var seconds: Double
}

func hold(_ options: HoldOptions) {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)

    let started = monotonicNanoseconds()
    var idle: [Int32] = []
    for _ in 0..<options.idle {
        do { idle.append(try connectUnix(options.socketPath)) } catch {
            fail("idle connection \(idle.count): \(error)")
        }
    }
    var streams: [Int32] = []
    for index in 0..<options.watches {
        do {
            let fd = try connectUnix(options.socketPath)
            let request = Array(
                "GET /v1/credentials/\(options.namespace)/c\(index % options.credentials)/watch HTTP/1.1\r\nHost: x\r\n\r\n"
                    .utf8)
            guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else {
                throw ConnectionError.system("send", errno)
            }
            streams.append(fd)
        } catch {
            fail("watch stream \(index): \(error)")
        }
    }
    // Every stream's head and first line (the credential as it is).
    var firstLines = 0
    for fd in streams where firstLine(fd) { firstLines += 1 }
    let openSeconds = Double(monotonicNanoseconds() - started) / 1e9
    print(
        "READY idle=\(idle.count) watches=\(streams.count) first_lines=\(firstLines) open_seconds=\(format(openSeconds, decimals: 2))"
    )
    fflush(nil)  // every stream: the script waits for this line

    // Hold, draining the streams (heartbeats) so nothing backs up.
    let end = monotonicNanoseconds() + UInt64(options.seconds * 1e9)
    var heartbeats = 0
    var buffer = [UInt8](repeating: 0, count: 4096)
    var pollers = streams.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    while monotonicNanoseconds() < end {
        guard poll(&pollers, nfds_t(pollers.count), 200) > 0 else { continue }
        for index in pollers.indices where pollers[index].revents != 0 {
            let count = recv(pollers[index].fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 { heartbeats += buffer[0..<count].filter { $0 == 10 }.count }
            if count == 0 { pollers[index].events = 0 }
            pollers[index].revents = 0
        }
    }
    func stillOpen(_ fd: Int32) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) > 0 else { return true }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }
    let idleOpen = idle.filter(stillOpen).count
    let streamsOpen = pollers.filter { $0.events != 0 }.count
    print("RESULT idle_open=\(idleOpen) watches_open=\(streamsOpen) stream_lines=\(heartbeats)")
    for fd in idle + streams { close(fd) }
}

/// Reads a stream's response until its status and first NDJSON line have arrived (10 s at most
/// between reads); true for a 200 with a line.
private func firstLine(_ fd: Int32) -> Bool {
    let crlfcrlf = Array("\r\n\r\n".utf8)
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        if let headEnd = received.firstRange(of: crlfcrlf)?.upperBound,
            let brace = received[headEnd...].firstIndex(of: UInt8(ascii: "{")),
            received[brace...].contains(10)
        {
            return received.starts(with: Array("HTTP/1.1 200".utf8))
        }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 10_000) > 0 else { return false }
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return false }
        received += buffer[0..<count]
    }
}

/// A connection to `target`: a Unix socket's path, or `tcp:IPV4:PORT` (the same loopback API
/// called directly, as the proxy's baseline in docs/benchmarks.md).
func connectUnix(_ target: String) throws -> Int32 {
    guard target.hasPrefix("tcp:") else {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(target.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return try connectSocket(family: AF_UNIX, to: address, named: target)
    }
    let parts = target.dropFirst(4).split(separator: ":")
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    guard parts.count == 2, let port = UInt16(parts[1]), inet_pton(AF_INET, String(parts[0]), &address.sin_addr) == 1
    else { throw ConnectionError.system("parse \(target)", EINVAL) }
    address.sin_port = port.bigEndian
    return try connectSocket(family: AF_INET, to: address, named: target)
}

/// A stream socket of `family` connected to `address` (TCP without Nagle's delay); closed again
/// when the connection fails.
private func connectSocket<Address>(family: Int32, to address: Address, named target: String) throws -> Int32 {
    #if canImport(Glibc)
        let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
    #else
        let fd = socket(family, SOCK_STREAM, 0)
    #endif
    guard fd >= 0 else { throw ConnectionError.system("socket", errno) }
    if family == AF_INET {
        var noDelay: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = address
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<Address>.size)) }
    }
    guard result == 0 else {
        let code = errno
        close(fd)
        throw ConnectionError.system("connect \(target)", code)
    }
    return fd
}
