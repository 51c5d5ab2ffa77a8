import Foundation
import Testing
import TokenVaultServer
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// Clients that misbehave must not take the daemon down: after each, a good request works.
@Suite struct HostileClientTests {
    func expectStillServing(_ server: TestServer) async throws {
        #expect(try await server.request("GET", "/v1/health").status == 200)
    }

    @Test func truncatedRequestThenHangUp() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            try await offThePool {
                let connection = try UnixSocketConnection(path: server.socketPath)
                try connection.send(
                    "PUT /v1/credentials/ns/x HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"provider\":")
            }  // the connection closes here, mid-body
            try await expectStillServing(server)
            #expect(
                try await server.request("GET", "/v1/credentials/ns/x").status == 404, "a cut-off body stores nothing")
        }
    }

    @Test func hugeHeaderIsRefused() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let status = try await offThePool { () -> Int? in
                let connection = try UnixSocketConnection(path: server.socketPath)
                try? connection.send(
                    "GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 200_000))\r\n\r\n")
                return (try? connection.readResponse(timeout: 5))??.status
            }
            #expect(status == nil || status! >= 400, "refused with an error status or a closed connection")
            try await expectStillServing(server)
        }
    }

    @Test func nonUTF8BodyIsABadRequest() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let status = try await offThePool { () -> Int? in
                let connection = try UnixSocketConnection(path: server.socketPath)
                let body: [UInt8] = [0xff, 0xfe, 0x7b, 0xc3, 0x28, 0x80]
                try connection.send(
                    Array("PUT /v1/credentials/ns/x HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
                        + body)
                return try connection.readResponse()?.status
            }
            #expect(status == 400)
            try await expectStillServing(server)
        }
    }

    @Test func slowlorisConnectionIsClosedAfterTheIdleTimeout() async throws {
        let server = try await TestServer(idleTimeoutSeconds: 1)
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let closed = try await offThePool {
                let connection = try UnixSocketConnection(path: server.socketPath)
                try connection.send("GET /v1/health HTTP/1.1\r\nHost: x\r\n")  // never finishes its headers
                return connection.waitForClose(timeout: 5)
            }
            #expect(closed, "the server must hang up on an idle, unfinished request")
            try await expectStillServing(server)
        }
    }

    @Test func thousandConcurrentConnections() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            var limit = rlimit()
            getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
            limit.rlim_cur = max(limit.rlim_cur, min(limit.rlim_max, 4096))
            setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)

            let answered = try await offThePool {
                let connections = try (0..<1000).map { _ in try UnixSocketConnection(path: server.socketPath) }
                for connection in connections { try connection.send("GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n") }
                var answered = 0
                for connection in connections where (try? connection.readResponse(timeout: 30))??.status == 200 {
                    answered += 1
                }
                return answered
            }
            #expect(answered == 1000)
            try await expectStillServing(server)
        }
    }
}
