import ArgumentParser
import Foundation
import TokenVaultClient

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Follow a credential: its state now, then a line on every refresh, failure or status change.",
        discussion:
            "Ends when the credential is deleted (or, for one a device sign-in was to create, when that sign-in fails) "
            + "or on Ctrl-C. With --json, one metadata document per line.")

    @OptionGroup var client: ClientOptions
    @Argument(help: "Credential id, namespace/name.") var id: String

    func run() async throws {
        try await client.withClient { vault in
            var last: String?
            for try await metadata in vault.watch(id) {
                last = metadata.status
                // Written straight to the descriptor: a pipe must see each line as it happens.
                var line: String
                if client.json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                    line = String(decoding: try encoder.encode(metadata), as: UTF8.self)
                } else {
                    line = "\(metadata.id)  generation \(metadata.generation)  \(metadata.status)"
                    if let expiresAt = metadata.expiresAt { line += "  expires \(expiresAt)" }
                    if let error = metadata.lastError { line += "  last error \(error.code): \(error.message)" }
                }
                TerminalText.line(line)
            }
            TerminalText.error(
                last == "pending_authorization"
                    ? "tokenvault: the sign-in into \(id) ended without tokens (tokenvault audit --credential \(id) says why)"
                    : "tokenvault: \(id) was deleted")
        }
    }
}
