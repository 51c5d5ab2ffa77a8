import ArgumentParser
import Foundation
import TokenVaultClient

/// Options of the commands that talk to a running daemon.
struct ClientOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The daemon's socket.",
            discussion: """
                Default: $TOKENVAULT_SOCKET, else <data-dir>/run/tokenvault.sock when --data-dir or \
                $TOKENVAULT_DATA_DIR is given, else /run/tokenvault/tokenvault.sock when it exists, else \
                ./.tokenvault/run/tokenvault.sock when ./.tokenvault and its run directory are yours and \
                no one else can write them
                """, valueName: "path"))
    var socket: String?

    @Option(
        help: ArgumentHelp(
            "Data directory, only to find the default socket.",
            discussion: "Default: $TOKENVAULT_DATA_DIR", valueName: "dir"))
    var dataDir: String?

    @Flag(help: "Print JSON (for scripts).") var json = false

    var socketPath: String {
        let environment = ProcessInfo.processInfo.environment
        if let socket { return socket }
        return TokenVaultClient.defaultSocketPath(
            environment: environment, dataDirectory: dataDir ?? environment["TOKENVAULT_DATA_DIR"])
    }

    /// Runs `body` with a connected client, printing client errors as one line and mapping them
    /// to the documented exit codes.
    func withClient(_ body: (TokenVaultClient) async throws -> Void) async throws {
        let client = TokenVaultClient(socketPath: socketPath)
        do {
            try await body(client)
            try? await client.shutdown()
        } catch let error as TokenVaultClientError {
            try? await client.shutdown()
            TerminalText.error("tokenvault: error: \(error.description)")
            throw ExitCode(Self.exitCode(for: error))
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// 3 not found, 5 daemon unreachable, 6 permission denied, 1 anything else.
    static func exitCode(for error: TokenVaultClientError) -> Int32 {
        switch error {
        case .daemonUnreachable: 5
        case .problem(let problem) where problem.status == 404: 3
        case .problem(let problem) where problem.status == 403: 6
        default: 1
        }
    }
}
