import NIOCore
import NIOPosix
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultProviders
@testable import TokenVaultServer

/// The proxied calls' kept upstream connections on their own: one left unused for the idle
/// timeout is closed (as the router's path's HTTP client closes its own), one used again is not.
@Suite struct UpstreamConnectionPoolTests {
    @Test func aConnectionIdleForTheTimeoutIsClosedAndOneUsedAgainIsKept() async throws {
        let upstream = try await TestUpstream()
        try await withStopping(upstream, stop: { await $0.stop() }) { upstream in
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            let transport = try UpstreamTransport(TransportSettings(maximumConnections: 4))
            let target = try UpstreamURL(parsing: "http://127.0.0.1:\(upstream.port)/echo")
            let key = UpstreamConnectionPool.Key(transport: transport, origin: "http://127.0.0.1:\(upstream.port)")
            let pool = try await loop.submit {
                NIOLoopBound(UpstreamConnectionPool(eventLoop: loop, idleTimeout: .seconds(3)), eventLoop: loop)
            }.get()
            // Two connections given back; the last is taken and given back again 1.5 s on (wide
            // margins: a loaded machine's sleeps overshoot).
            let channels = try await loop.flatSubmit {
                let first = pool.value.connect(to: target, with: transport)
                let second = pool.value.connect(to: target, with: transport)
                return first.and(second).map { links in
                    pool.value.giveBack(links.0, key)
                    pool.value.giveBack(links.1, key)
                    return [links.0.channel, links.1.channel]
                }
            }.get()
            try await Task.sleep(for: .milliseconds(1500))
            let used = try await loop.submit {
                let link = pool.value.take(key)
                if let link { pool.value.giveBack(link, key) }
                return link?.channel
            }.get()
            #expect(used === channels[1], "the last given back is taken first")
            #expect(channels[0].isActive, "idle for half the timeout: kept")
            #expect(try await waitUntil(within: 10) { !channels[0].isActive }, "idle past the timeout: closed")
            #expect(channels[1].isActive, "used 1.5 s later: kept 1.5 s longer")
            #expect(try await waitUntil(within: 10) { !channels[1].isActive })
            #expect(try await loop.submit { pool.value.take(key) == nil }.get())
        }
    }
}
