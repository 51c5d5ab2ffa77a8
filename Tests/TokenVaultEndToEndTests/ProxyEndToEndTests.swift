import Foundation
import Testing
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// The proxy through the built daemon and `tokenvault call`: a call made with a credential's
/// token whose value never reaches the caller, and bodies streamed without the daemon holding
/// them.
@Suite struct ProxyEndToEndTests {
    /// The CLI, off the cooperative pool: the loopback upstream answers on that pool, in this
    /// process, and a blocked pool thread would starve it.
    private func cli(_ harness: ResilienceHarness, _ arguments: [String]) async throws -> CommandRunner.Result {
        let runner = harness.cli
        return try await offThePool { try runner.run(arguments + ["--socket", harness.socket]) }
    }

    /// A daemon whose instance `bank` lists the loopback upstream, with credential `bank/alice`.
    private func start() async throws -> (ResilienceHarness, TestUpstream, DaemonProcess, String) {
        let upstream = try await TestUpstream(accepts: { $0 == "never" })
        let harness = try await ResilienceHarness(
            lifetime: 3600, limits: "{}", refresh: "{}",
            providers:
                #""bank": {"kind": "oauth2", "api_base_urls": ["\#(upstream.base)/"], "proxy_headers": ["X-Keep", "X-MCP"]}"#
        )
        let daemon = try await offThePool { try harness.startDaemon(logLevel: "debug") }
        let token = "at-proxy-\(UUID().uuidString)"
        let socket = harness.socket
        let put = try await offThePool {
            try UnixSocketHTTP.request(
                socket, "PUT", "/v1/credentials/bank/alice",
                body: #"{"provider": "bank", "token": {"access_token": "\#(token)", "expires_in": 3600}}"#)
        }
        try #require(put.status == 201, "\(put.text)")
        return (harness, upstream, daemon, token)
    }

    @Test func tokenvaultCallMakesTheCallAndShowsNoToken() async throws {
        let (harness, upstream, daemon, token) = try await start()
        defer { daemon.terminate() }
        let echo = try await cli(
            harness,
            [
                "call", "bank/alice", "GET", "/echo?x=1", "-H", "X-Keep: kept", "-H", "X-Unlisted: 1", "--include",
            ])
        #expect(echo.status == 0, "\(echo.stderr)")
        // X-Keep is the instance's `proxy_headers`; X-Unlisted is on no list and stays behind.
        #expect(echo.stdout.hasPrefix("HTTP 200\r\n") && echo.stdout.contains("\"x-keep\":\"kept\""), "\(echo.stdout)")
        #expect(!echo.stdout.contains("x-unlisted"), "\(echo.stdout)")
        #expect(upstream.authorizations.last == "Bearer \(token)")

        let file = harness.directory.file("body.bin")
        let body = Data((0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        writeFile(file, body)
        let upload = try await cli(
            harness,
            [
                "call", "bank/alice", "POST", upstream.base + "/upload", "-d", "@" + file,
            ])
        #expect(upload.status == 0, "\(upload.stderr)")
        #expect(
            upload.stdout.contains("\"length\": \(2 << 20)") && upload.stdout.contains("\(TestUpstream.checksum(body))")
        )

        // A reader that stops early (`| head`) ends the output, not with a crash.
        let pipeline =
            "\(CommandRunner.locateBinary()) call bank/alice GET '/stream?bytes=4194304' --socket \(harness.socket) "
            + "| head -c 100 >/dev/null"
        let piped = try await offThePool {
            try CommandRunner(executable: "/bin/bash").run(["-o", "pipefail", "-c", pipeline])
        }
        #expect(piped.status == 0, "\(piped.status) \(piped.stderr.prefix(500))")

        // The upstream refuses the token; `bank` cannot refresh: the 401 comes back, exit 4.
        let refused = try await cli(harness, ["call", "bank/alice", "GET", "/protected"])
        #expect(refused.status == 4, "\(refused.status) \(refused.stderr)")
        // Outside the bases: the daemon's refusal, exit 1, nothing sent.
        let sent = upstream.received.count
        let outside = try await cli(
            harness,
            [
                "call", "bank/alice", "GET", "https://elsewhere.example/x",
            ])
        #expect(outside.status == 1 && outside.stderr.contains("upstream_not_allowed"), "\(outside.stderr)")
        #expect(upstream.received.count == sent)

        daemon.terminate()
        for output in [echo, upload, refused, outside] {
            #expect(!output.stdout.contains(token) && !output.stderr.contains(token))
        }
        #expect(!daemon.log.contains(token), "the token in a debug-level daemon log")
        await upstream.stop()
    }

    /// Answers stream through without being held. Callers slow to take theirs hold the upstream
    /// back instead of the daemon holding the bytes: four 16 MiB answers whose callers wait 2 s
    /// before reading leave the daemon's peak memory far below the 64 MiB the upstream could have
    /// sent meanwhile (without the backpressure it grew by all of it). Then eight answers of
    /// 16 MiB taken at once grow it by far less than the 128 MiB passed on (a few buffers per
    /// call, never a body). One daemon for both, the slow callers first: the peak only rises.
    @Test func answersStreamThroughWithoutBeingHeld() async throws {
        let (harness, upstream, daemon, _) = try await start()
        defer { daemon.terminate() }
        let pid = daemon.process.processIdentifier
        let socket = harness.socket
        // One call first: the caller's groups are learnt (so the calls below are made on the
        // event loop) and the upstream connections exist before the baseline.
        _ = try await offThePool {
            try UnixSocketHTTP.request(socket, "GET", "/v1/credentials/bank/alice/proxy/stream?bytes=65536")
        }
        let slow = try await Self.peakGrowth(pid, socket, downloads: 4, of: 16 << 20, readingAfter: 2)
        #expect(slow < 32, "slow callers: the daemon's peak memory grew by \(slow) MiB")
        let fast = try await Self.peakGrowth(pid, socket, downloads: 8, of: 16 << 20, readingAfter: 0)
        #expect(fast < 64, "the daemon's peak memory grew by \(fast) MiB")
        await upstream.stop()
    }

    /// How much the daemon's peak memory (MiB) grows while `count` callers download `size` bytes
    /// each through the proxy at once, each starting to read `delay` seconds after its request.
    private static func peakGrowth(
        _ pid: Int32, _ socket: String, downloads count: Int, of size: Int, readingAfter delay: Double
    ) async throws -> Int {
        let before = try #require(peakKilobytes(pid))
        let received = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<count {
                group.addTask {
                    try await offThePool {
                        try download(socket, "/v1/credentials/bank/alice/proxy/stream?bytes=\(size)", after: delay)
                    }
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(received.allSatisfy { $0 >= size }, "\(received)")
        let after = try #require(peakKilobytes(pid))
        print(
            "proxy streaming: \(count) x \(size >> 20) MiB answers read after \(delay) s, daemon peak memory "
                + "\(before / 1024) -> \(after / 1024) MiB")
        return (after - before) / 1024
    }

    /// A real MCP client (the `mcp` package from PyPI, installed by `make test`) starts
    /// `tokenvault mcp`, lists its tools, lists the credentials and calls an API through one.
    @Test func anMCPClientCallsAnAPIThroughACredential() async throws {
        let (harness, upstream, daemon, token) = try await start()
        defer { daemon.terminate() }
        let python = AuthorizationServerProcess.packageRoot + "/.build/test-venv/bin/python"
        try #require(
            FileManager.default.isExecutableFile(atPath: python),
            "no \(python): run make test (or scripts/install-deps.sh --test)")
        let script = harness.directory.file("client.py")
        writeFile(script, Data(Self.mcpClient.utf8))
        let arguments = [script, CommandRunner.locateBinary(), harness.socket, upstream.base]
        let run = try await offThePool { try CommandRunner(executable: python).run(arguments) }
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        let result = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any] ?? [:]
        #expect(result["tools"] as? [String] == ["http_request", "list_credentials", "sign_in"], "\(result)")
        #expect(
            (result["listed"] as? String)?.contains("bank/alice (bank, active): \(upstream.base)") == true, "\(result)")
        #expect(result["call_error"] as? Bool == false)
        #expect((result["called"] as? String)?.hasPrefix("HTTP 200") == true, "\(result)")
        #expect((result["called"] as? String)?.contains("\"x-mcp\":\"yes\"") == true, "\(result)")
        #expect(result["outside_error"] as? Bool == true)
        #expect((result["outside"] as? String)?.contains("upstream_not_allowed") == true, "\(result)")
        // Only the methods the tool lists reach the daemon.
        for refused in ["unlisted", "smuggled"] {
            #expect(result[refused + "_error"] as? Bool == true, "\(result)")
            #expect((result[refused] as? String)?.contains("method must be one of") == true, "\(result)")
        }
        #expect(!upstream.received.contains { $0.contains("from=trace") || $0.contains("from=smuggled") })
        #expect(upstream.authorizations.last == "Bearer \(token)", "the call carried the token")
        #expect(!run.stdout.contains(token) && !run.stderr.contains(token), "a token in an MCP result")
        // The MCP server is a binary of its own: the daemon holding the secrets loads neither the
        // MCP library's FoundationNetworking nor the libcurl, GnuTLS and Kerberos behind it.
        // Read to the end: procfs gives a file of size 0, of which `String(contentsOfFile:)` reads
        // only the first part.
        let mapsFile = try #require(FileHandle(forReadingAtPath: "/proc/\(daemon.process.processIdentifier)/maps"))
        let maps = String(decoding: mapsFile.readDataToEndOfFile(), as: UTF8.self)
        #expect(maps.contains("libsodium"), "the daemon's libraries are not in its maps")
        #expect(!maps.contains("libFoundationNetworking") && !maps.contains("libcurl"), "the daemon loads libcurl")
        await upstream.stop()
    }

    /// `tokenvault mcp` without its `tokenvault-mcp` beside it says what is missing.
    @Test func mcpWithoutItsServerSaysWhatIsMissing() throws {
        let directory = TemporaryDirectory()
        let lone = directory.file("tokenvault")
        try FileManager.default.copyItem(atPath: CommandRunner.locateBinary(), toPath: lone)
        let run = try CommandRunner(executable: lone).run(["mcp", "--socket", directory.file("none.sock")])
        #expect(run.status == 1, "\(run.stdout) \(run.stderr)")
        // The path as the kernel names it: the temporary directory's links resolved.
        #expect(run.stderr.contains("cannot run the MCP server /"), "\(run.stderr)")
        #expect(run.stderr.contains("/tokenvault-mcp: No such file or directory"), "\(run.stderr)")
    }

    /// The MCP client: argv = tokenvault binary, socket, upstream base; prints what it saw as JSON.
    static let mcpClient = """
        import asyncio, json, sys
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        def failed(result):
            return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))

        def text(result):
            return "\\n".join(part.text for part in result.content if getattr(part, "text", None) is not None)

        async def main():
            binary, socket, base = sys.argv[1:4]
            server = StdioServerParameters(command=binary, args=["mcp", "--socket", socket])
            async with stdio_client(server) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    tools = await session.list_tools()
                    listed = await session.call_tool("list_credentials", {})
                    called = await session.call_tool(
                        "http_request",
                        {"credential": "bank/alice", "method": "GET", "url": "/echo?from=mcp", "headers": {"X-MCP": "yes"}})
                    outside = await session.call_tool(
                        "http_request", {"credential": "bank/alice", "method": "GET", "url": "https://elsewhere.example/"})
                    unlisted = await session.call_tool(
                        "http_request", {"credential": "bank/alice", "method": "TRACE", "url": "/echo?from=trace"})
                    smuggled = await session.call_tool(
                        "http_request",
                        {"credential": "bank/alice", "method": "GET /echo?from=smuggled HTTP/1.1", "url": "/echo"})
                    print(json.dumps({
                        "tools": sorted(tool.name for tool in tools.tools),
                        "listed": text(listed),
                        "called": text(called), "call_error": failed(called),
                        "outside": text(outside), "outside_error": failed(outside),
                        "unlisted": text(unlisted), "unlisted_error": failed(unlisted),
                        "smuggled": text(smuggled), "smuggled_error": failed(smuggled),
                    }))

        asyncio.run(main())
        """

    /// The body bytes of one answer, read and dropped as they arrive (so the test holds nothing).
    /// Reads the whole answer to `target`, starting `after` seconds after sending the request.
    private static func download(_ socketPath: String, _ target: String, after delay: Double = 0) throws -> Int {
        let connection = try UnixSocketConnection(path: socketPath)
        try connection.send("GET \(target) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(connection.descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            total += count
        }
        return total
    }

    /// `VmHWM` of a process, in KiB.
    private static func peakKilobytes(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
        return line.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") }
    }
}
