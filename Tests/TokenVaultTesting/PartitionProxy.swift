import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP proxy on 127.0.0.1 in front of one port, which a test can cut off the way a network
/// partition does: while cut, no byte moves in either direction and nothing is closed (the
/// connections go silent, and a new connection is accepted but hears nothing); once healed,
/// whatever is still open carries on where it stopped, as TCP does when a partition ends before
/// either side gave up. One daemon connecting through it is "one node cut off from the database".
public final class PartitionProxy: Sendable {
    public let port: Int
    private let listener: Int32
    private let state: Mutex<State>

    private struct State {
        var target: Int
        var cut = false
        var closed = false
        /// Until the accepting thread closed it, under this lock: only then may `close()` shut
        /// it down (its number may be another socket's after).
        var listening = true
        /// Open connections by number: their two descriptors and how many pumps still run.
        /// A connection's descriptors are closed only here, by the last pump to end, and are
        /// shut down only while listed: a closed number may already be another socket's.
        var connections: [Int: Connection] = [:]
        var nextConnection = 0
    }

    private struct Connection {
        let client: Int32
        let upstream: Int32
        var pumping = 2

        func shutDown() {
            shutdown(client, Int32(SHUT_RDWR))
            shutdown(upstream, Int32(SHUT_RDWR))
        }
    }

    public init(to target: Int) throws {
        state = Mutex(State(target: target))
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestPostgresError("socket() failed") }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound, listen(descriptor, 64) == 0 else {
            Glibc.close(descriptor)
            throw TestPostgresError("the partition proxy cannot listen")
        }
        listener = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// Silences every connection, open and new, until `heal()`.
    public func cut() { state.withLock { $0.cut = true } }

    public func heal() { state.withLock { $0.cut = false } }

    /// Sends new connections to `target` and ends the open ones, as a virtual IP moved to a
    /// promoted standby does.
    public func retarget(to target: Int) {
        state.withLock { state in
            state.target = target
            for connection in state.connections.values { connection.shutDown() }
        }
    }

    /// Stops listening and ends every connection; a second call does nothing.
    /// Bytes held back by a cut are never delivered: the connections end before the cut lifts.
    /// The listener is shut down here and closed by the accepting thread once `accept` fails:
    /// closed here, its number could be another socket's by the time that thread calls `accept`.
    public func close() {
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            state.cut = false
            for connection in state.connections.values { connection.shutDown() }
            if state.listening { shutdown(listener, Int32(SHUT_RDWR)) }
        }
    }

    /// Whether the accepting thread has closed the listener (after `close()`), within `seconds`.
    public func waitUntilStopped(seconds: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while state.withLock({ $0.listening }) {
            guard Date() < deadline else { return false }
            usleep(5_000)
        }
        return true
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                let failure = errno
                let stopped = state.withLock { state -> Bool in
                    guard state.closed else { return false }
                    Glibc.close(listener)
                    state.listening = false
                    return true
                }
                if stopped { return }
                // A connection aborted before it was taken, or no descriptor free: try again.
                if failure != EINTR { usleep(10_000) }
                continue
            }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: state.withLock { $0.target })
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            let number = state.withLock { state -> Int? in
                guard connected, !state.closed else { return nil }
                state.nextConnection += 1
                state.connections[state.nextConnection] = Connection(client: client, upstream: upstream)
                return state.nextConnection
            }
            guard let number else {
                Glibc.close(client)
                Glibc.close(upstream)
                continue
            }
            Thread { [self] in pump(from: client, to: upstream, connection: number) }.start()
            Thread { [self] in pump(from: upstream, to: client, connection: number) }.start()
        }
    }

    /// Copies bytes until either side closes; while cut, holds them (reads nothing, writes
    /// nothing), so the kernel's buffers fill and the sender waits, as behind a partition.
    private func pump(from source: Int32, to destination: Int32, connection number: Int) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        defer { ended(number) }
        while true {
            waitWhileCut()
            let count = read(source, &buffer, buffer.count)
            guard count > 0 else { return }
            waitWhileCut()
            var sent = 0
            while sent < count {
                let written = buffer[sent..<count].withUnsafeBytes { write(destination, $0.baseAddress, $0.count) }
                guard written > 0 else { return }
                sent += written
            }
        }
    }

    /// A pump ended: the connection is shut down both ways, and the last pump closes it.
    private func ended(_ number: Int) {
        state.withLock { state in
            guard var connection = state.connections[number] else { return }
            connection.shutDown()
            connection.pumping -= 1
            guard connection.pumping == 0 else {
                state.connections[number] = connection
                return
            }
            state.connections[number] = nil
            Glibc.close(connection.client)
            Glibc.close(connection.upstream)
        }
    }

    private func waitWhileCut() {
        while state.withLock({ $0.cut }) { usleep(10_000) }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return address
    }
}
