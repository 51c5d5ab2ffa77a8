import Foundation
import Testing
import TokenVaultClient

/// README.md's Swift lines are `walkThrough`'s, between the markers, and they do what their
/// comments say against a daemon on a real socket.
@Suite struct ReadmeExampleTests {
    /// The header the last line reads.
    static func walkThrough(socket: String) async throws -> String {
        // README begin
        let vault = TokenVaultClient(socketPath: socket)  // or TokenVaultClient.defaultSocketPath()
        let sdkAnswer = Data(#"{"access_token":"at-5","refresh_token":"rt-5","expires_in":3600}"#.utf8)
        try await vault.put("payments/frank", provider: "oauth2", token: sdkAnswer)
        let header = try await vault.token("payments/frank", minTTL: 60).authorizationHeaderValue  // Bearer at-5
        // README end
        try await vault.shutdown()
        return header
    }

    @Test func theReadmeShowsTheseLinesAndTheyRun() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let section = try #require(readme.range(of: "From Swift, with")).upperBound
        let shown = try #require(readme[section...].firstMatch(of: /```swift\n((?s).*?)```/)).output.1
        let marked = try #require(source.firstMatch(of: /README begin\n((?s).*?)\/\/ README end/)).output.1
        func squashed(_ text: Substring) -> String { text.filter { !$0.isWhitespace } }
        #expect(squashed(shown) == squashed(marked), "README.md's Swift lines differ from walkThrough's")
        let header = try await Daemon.run { daemon in try await Self.walkThrough(socket: daemon.server.socketPath) }
        #expect(header == "Bearer at-5")
    }
}
