import Foundation
import Testing
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// Sign-ins an agent starts through `tokenvault mcp`, driven by a real MCP client (PyPI `mcp`,
/// which declares URL-mode elicitation), against Authlib: the `sign_in` tool answers a device
/// code or an authorization link and shows it to the person through the client; `http_request`
/// on a credential that does not exist says how to get it; and a sign-in the agent's uid started
/// cannot be finished by another uid, even one allowed to authorize in that namespace.
@Suite struct MCPSignInEndToEndTests {
    @Test(.enabled(if: getuid() == 0, "switching uid needs root"))
    func anAgentStartsSignInsThatOnlyItsUIDFinishes() async throws {
        let (harness, server) = try await SignInHarness.make(
            sections: #"""
                "socket": {"mode": "0660", "group": "4242"},
                "access": [{"user": 4242, "namespaces": ["agents"], "permissions": ["credential:authorize"]}]
                """#)
        chmod(harness.directory.path, 0o755)
        let daemon = try harness.startDaemon(logLevel: "info")
        defer { _ = daemon.terminate() }
        let python = AuthorizationServerProcess.packageRoot + "/.build/test-venv/bin/python"
        let script = harness.directory.file("agent.py")
        writeFile(script, Data(Self.client.utf8))
        let run = try await offThePool {
            try CommandRunner(executable: python).run([script, CommandRunner.locateBinary(), harness.socket])
        }
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        let result = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any] ?? [:]
        #expect((result["tools"] as? [String])?.contains("sign_in") == true, "\(result)")

        // A missing credential: the call says a person must sign in, and how.
        #expect(result["missing_error"] as? Bool == true)
        #expect((result["missing"] as? String)?.contains("call sign_in with") == true, "\(result)")

        // The device code, shown to the person through the client, and the vault polls.
        let device = try #require(result["device"] as? [String: Any], "\(result)")
        let userCode = try #require(device["user_code"] as? String)
        #expect(device["offered_to_user"] as? Bool == true)
        let shown = result["elicitations"] as? [[String: Any]] ?? []
        #expect(shown.first?["mode"] as? String == "url", "\(shown)")
        #expect(shown.first?["url"] as? String == device["verification_uri_complete"] as? String, "\(shown)")
        #expect((shown.first?["message"] as? String)?.contains(userCode) == true, "\(shown)")
        try await server.decideDevice(userCode)
        let stored = try await waitUntil(within: 60) {
            (try? UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/agents/device").status) == 200
        }
        #expect(stored, "the device sign-in the agent started was not stored")

        // The link of a browser sign-in, offered through the client and kept out of the model's
        // context (it carries the state): another uid, allowed to authorize here, cannot finish it.
        #expect((result["browser"] as? [String: Any])?["authorization_url"] == nil, "\(result)")
        #expect(!(result["browser_text"] as? String ?? "").contains("state="), "\(result)")
        let url = try #require(shown.count == 2 ? shown.last?["url"] as? String : nil, "\(shown)")
        let callback = try await server.signIn(url)
        let body = String(
            decoding: try JSONSerialization.data(withJSONObject: ["callback_url": callback]), as: UTF8.self)
        let other = try CommandRunner(executable: "/usr/bin/setpriv").run([
            "--reuid=4242", "--regid=4242", "--clear-groups", "curl", "-s", "--unix-socket", harness.socket, "-X",
            "POST", "-H", "Content-Type: application/json", "--data-binary", body,
            "http://localhost/v1/credentials/agents/browser/authorization/callback",
        ])
        #expect(other.stdout.contains("\"code\":\"authorization_mismatch\""), "\(other.stdout) \(other.stderr)")
        #expect(try UnixSocketHTTP.request(harness.socket, "GET", "/v1/credentials/agents/browser").status == 404)
    }

    /// The agent: argv = tokenvault binary, socket; prints what it saw as JSON. Its client shows
    /// pages (URL-mode elicitation) by recording them and accepting.
    static let client = """
        import asyncio, json, sys
        from mcp import ClientSession, StdioServerParameters, types
        from mcp.client.stdio import stdio_client

        shown = []

        async def elicit(context, params):
            shown.append({"mode": getattr(params, "mode", None), "url": getattr(params, "url", None),
                          "message": getattr(params, "message", None)})
            return types.ElicitResult(action="accept")

        def text(result):
            return "\\n".join(part.text for part in result.content if getattr(part, "text", None) is not None)

        def failed(result):
            return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))

        def structured(result):
            return getattr(result, "structured_content", None) or getattr(result, "structuredContent", None) or {}

        async def main():
            binary, socket = sys.argv[1:3]
            server = StdioServerParameters(command=binary, args=["mcp", "--socket", socket])
            async with stdio_client(server) as (read, write):
                async with ClientSession(read, write, elicitation_callback=elicit) as session:
                    await session.initialize()
                    tools = await session.list_tools()
                    missing = await session.call_tool(
                        "http_request", {"credential": "agents/device", "method": "GET", "url": "/"})
                    device = await session.call_tool(
                        "sign_in", {"credential": "agents/device", "provider": "authlib", "scopes": ["profile"]})
                    browser = await session.call_tool(
                        "sign_in", {"credential": "agents/browser", "provider": "authlib", "mode": "url",
                                    "redirect_uri": "http://127.0.0.1/callback", "scopes": ["openid"]})
                    # The pages are offered without holding up the results: wait for both.
                    for _ in range(300):
                        if len(shown) >= 2:
                            break
                        await asyncio.sleep(0.1)
                    print(json.dumps({
                        "tools": sorted(tool.name for tool in tools.tools),
                        "missing": text(missing), "missing_error": failed(missing),
                        "device": structured(device), "device_text": text(device), "device_error": failed(device),
                        "browser": structured(browser), "browser_text": text(browser), "browser_error": failed(browser),
                        "elicitations": shown,
                    }))

        asyncio.run(main())
        """
}
