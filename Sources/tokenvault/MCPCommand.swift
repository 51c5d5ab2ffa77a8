import ArgumentParser
import Foundation

/// `tokenvault mcp`: a Model Context Protocol server on standard input and output, for an agent
/// runtime to start as a subprocess under the agent's own uid. It talks to the daemon's socket
/// like any other client, so what the agent may do is what the daemon allows that uid
/// (`credential:use` is enough to call; it never sees a token).
///
/// The server is `tokenvault-mcp`, installed beside this binary: this command resolves the socket
/// as every client command does and replaces itself with it (same process, uid and stdio), so the
/// daemon's binary carries neither the MCP library nor what that links (`MCPServerCommand`).
struct MCPCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mcp",
        abstract:
            "Serve the Model Context Protocol on stdio: tools to list usable credentials and call APIs with them.",
        discussion: """
            Tools: list_credentials (id, provider, status, API base URLs) and http_request (a call \
            through the daemon's proxy; the answer's status, headers and body, cut at --max-body-bytes). \
            Logs go to standard error; standard output is the protocol's. Runs tokenvault-mcp, which is \
            installed beside tokenvault.
            """)

    @OptionGroup var client: ClientOptions
    @Option(help: "The most of an answer's body a tool result carries.") var maxBodyBytes = 256 * 1024

    func validate() throws {
        guard (1...(16 << 20)).contains(maxBodyBytes) else {
            throw ValidationError("--max-body-bytes must be 1 to 16777216")
        }
    }

    func run() throws {
        let server = Self.serverPath()
        let arguments = [
            server, "--socket", client.socketPath, "--max-body-bytes", String(maxBodyBytes),
            "--server-version", tokenVaultVersion,
        ]
        var argv = arguments.map { strdup($0) } + [nil]
        execv(server, &argv)
        // Only reached when the exec failed.
        let reason = String(cString: strerror(errno))
        TerminalText.error("tokenvault: error: cannot run the MCP server \(server): \(reason)")
        throw ExitCode.failure
    }

    /// `tokenvault-mcp` in the directory of this binary, its links resolved (`/usr/bin` for the
    /// package, `.build/<configuration>` for a build): the kernel's name for it, else (no `/proc`)
    /// the path it was started by.
    static func serverPath() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let binary =
            length > 0
            ? String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            : CommandLine.arguments[0]
        return URL(fileURLWithPath: binary).deletingLastPathComponent().appendingPathComponent("tokenvault-mcp").path
    }
}
