import ArgumentParser
import Foundation
import Logging
import MCP
import Synchronization
import TokenVaultClient

/// `tokenvault-mcp`: the Model Context Protocol server that `tokenvault mcp` runs (it resolves the
/// socket and the options, then replaces itself with this binary). It is a binary of its own so
/// that the daemon does not carry the MCP library and what it links: FoundationNetworking, and
/// with it libcurl, GnuTLS, Kerberos and LDAP, about 6.5 MB resident in every `tokenvault`
/// process that never makes an MCP call (docs/benchmarks.md).
@main
struct MCPServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokenvault-mcp",
        abstract: "The MCP server of `tokenvault mcp` (run that: it finds the socket and starts this).")

    @Option(help: ArgumentHelp("The daemon's socket.", valueName: "path")) var socket: String
    @Option(help: "The most of an answer's body a tool result carries.") var maxBodyBytes = 256 * 1024
    @Option(help: "The version the server reports to its client.") var serverVersion = "unknown"

    func validate() throws {
        guard (1...(16 << 20)).contains(maxBodyBytes) else {
            throw ValidationError("--max-body-bytes must be 1 to 16777216")
        }
    }

    func run() async throws {
        var logger = Logger(label: "tokenvault.mcp") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .warning
        let vault = TokenVaultClient(socketPath: socket, timeout: .seconds(30))
        // Whether the client shows pages to its user (URL-mode elicitation): read at initialize.
        let showsURLs = Mutex(false)
        let server = Server(
            name: "tokenvault", version: serverVersion,
            instructions: """
                Make API calls with credentials held by TokenVault. list_credentials shows which you may \
                use and where; http_request makes a call with one; sign_in asks a person to grant a credential \
                that is missing or needs a new sign-in. You never see a token.
                """,
            capabilities: .init(tools: .init(listChanged: false)))
        let tools = VaultMCPTools(vault: vault, maximumBodyBytes: maxBodyBytes) { [server] message, url in
            guard showsURLs.withLock({ $0 }) else { return false }
            // Not awaited: the person may take minutes, or never answer.
            Task {
                _ = try? await server.requestElicitation(message: message, url: url, elicitationId: UUID().uuidString)
            }
            return true
        }
        await server.withMethodHandler(ListTools.self) { _ in .init(tools: tools.tools) }
        await server.withMethodHandler(CallTool.self) { parameters in
            await tools.call(parameters.name, parameters.arguments ?? [:])
        }
        try await server.start(transport: StdioTransport(logger: logger)) { _, capabilities in
            showsURLs.withLock { $0 = capabilities.elicitation?.url != nil }
        }
        await server.waitUntilCompleted()
        try? await vault.shutdown()
    }
}
