import Testing
import TokenVaultClient

/// What `call` refuses before it sends anything.
@Suite struct CallArgumentTests {
    /// A method with a space, a line break or a control character never reaches a request line:
    /// refused before anything is sent (here, before a daemon that does not exist is even dialled).
    @Test(arguments: ["GET /admin HTTP/1.1", "GET\r\nX-Injected: 1", "", "G\u{0}T"])
    func aMethodThatIsNotATokenIsRefusedBeforeSending(_ method: String) async throws {
        try await TokenVaultClient.withClient(socketPath: "/nonexistent/tokenvault.sock") { client in
            let error = await #expect(throws: TokenVaultClientError.self) {
                _ = try await client.call("payments/alice", method: method, "/echo")
            }
            guard case .invalidArgument? = error else {
                Issue.record("expected invalidArgument, got \(String(describing: error))")
                return
            }
        }
    }
}
