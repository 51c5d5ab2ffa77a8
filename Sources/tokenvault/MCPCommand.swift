import ArgumentParser
import Foundation
import Logging
import MCP
import TokenVaultClient

/// `tokenvault mcp`: a Model Context Protocol server on standard input and output, for an agent
/// runtime to start as a subprocess under the agent's own uid. It talks to the daemon's socket
/// like any other client, so what the agent may do is what the daemon allows that uid
/// (`credential:use` is enough to call; it never sees a token).
struct MCPCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mcp",
        abstract:
            "Serve the Model Context Protocol on stdio: tools to list usable credentials and call APIs with them.",
        discussion: """
            Tools: list_credentials (id, provider, status, API base URLs) and http_request (a call \
            through the daemon's proxy; the answer's status, headers and body, cut at --max-body-bytes). \
            Logs go to standard error; standard output is the protocol's.
            """)

    @OptionGroup var client: ClientOptions
    @Option(help: "The most of an answer's body a tool result carries.") var maxBodyBytes = 256 * 1024

    func validate() throws {
        guard (1...(16 << 20)).contains(maxBodyBytes) else {
            throw ValidationError("--max-body-bytes must be 1 to 16777216")
        }
    }

    func run() async throws {
        var logger = Logger(label: "tokenvault.mcp") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .warning
        let vault = TokenVaultClient(socketPath: client.socketPath, timeout: .seconds(30))
        let tools = VaultMCPTools(vault: vault, maximumBodyBytes: maxBodyBytes)
        let server = Server(
            name: "tokenvault", version: tokenVaultVersion,
            instructions: """
                Make API calls with credentials held by TokenVault. list_credentials shows which you may \
                use and where; http_request makes a call with one. You never see a token.
                """,
            capabilities: .init(tools: .init(listChanged: false)))
        await server.withMethodHandler(ListTools.self) { _ in .init(tools: tools.tools) }
        await server.withMethodHandler(CallTool.self) { parameters in
            await tools.call(parameters.name, parameters.arguments ?? [:])
        }
        try await server.start(transport: StdioTransport(logger: logger))
        await server.waitUntilCompleted()
        try? await vault.shutdown()
    }
}
