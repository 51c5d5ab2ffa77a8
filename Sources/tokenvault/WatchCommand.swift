import ArgumentParser
import Foundation
import TokenVaultClient

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Follow a credential's state (NDJSON stream; arrives with the refresh engine).")

    @OptionGroup var client: ClientOptions
    @Argument(help: "Credential id, namespace/name.") var id: String

    func run() async throws {
        // The daemon answers 501 until the refresh engine exists; show the current state and say so.
        try await client.withClient { vault in
            try ClientOutput.metadata(try await vault.metadata(id), json: client.json)
            FileHandle.standardError.write(
                Data("tokenvault: watching changes arrives with the refresh engine; this is the current state\n".utf8))
        }
    }
}
