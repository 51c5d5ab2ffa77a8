import Foundation
import Testing
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// The tests' TCP proxy touches only its own connections: it shuts down and closes only the
/// descriptors it still holds. A descriptor's number is handed out again as soon as it is closed,
/// and the test process holds the sockets of every suite running beside one that uses the proxy.
@Suite struct PartitionProxyTests {
    @Test func aConnectionItsTargetRefusedLeavesOtherSocketsAlone() async throws {
        let proxy = try PartitionProxy(to: Self.closedPort())
        defer { proxy.close() }
        for _ in 0..<4 { try await Self.connectUntilClosed(port: proxy.port) }
        // Descriptors are handed out lowest first: these reuse the numbers the proxy closed.
        let pairs = (0..<32).map { _ in Self.socketPair() }
        defer { for pair in pairs { close(pair.0); close(pair.1) } }
        proxy.retarget(to: Self.closedPort())
        proxy.close()
        Self.expectOpen(pairs)
    }

    @Test func closingTwiceLeavesOtherSocketsAlone() throws {
        let proxy = try PartitionProxy(to: Self.closedPort())
        proxy.close()
        // The accepting thread closes the listener; its number is then handed out again.
        #expect(proxy.waitUntilStopped())
        let pairs = (0..<32).map { _ in Self.socketPair() }
        defer { for pair in pairs { close(pair.0); close(pair.1) } }
        proxy.close()
        Self.expectOpen(pairs)
    }

    /// Each pair still carries a byte: the proxy neither shut down nor closed a socket it never
    /// opened (a write to a shut-down socket fails; MSG_NOSIGNAL keeps SIGPIPE from ending the run).
    private static func expectOpen(_ pairs: [(Int32, Int32)]) {
        for pair in pairs {
            var byte: UInt8 = 7
            #expect(send(pair.0, &byte, 1, Int32(MSG_NOSIGNAL)) == 1, "a socket the proxy never opened was shut down")
            byte = 0
            #expect(read(pair.1, &byte, 1) == 1 && byte == 7)
        }
    }

    /// A port on 127.0.0.1 that refuses connections: bound, then closed.
    private static func closedPort() -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = bind(descriptor, $0, length)
                _ = getsockname(descriptor, $0, &length)
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Connects to the proxy and waits until it hangs up (its target refused).
    private static func connectUntilClosed(port: Int) async throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        #expect(connected)
        var byte: UInt8 = 0
        #expect(read(descriptor, &byte, 1) <= 0)
    }

    private static func socketPair() -> (Int32, Int32) {
        var descriptors: [Int32] = [0, 0]
        _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &descriptors)
        return (descriptors[0], descriptors[1])
    }
}
