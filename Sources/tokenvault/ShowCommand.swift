import ArgumentParser
import TokenVaultClient

struct ShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show the metadata of ns/name (no secrets).")

    @OptionGroup var client: ClientOptions
    @Argument(help: "Credential id, namespace/name.") var id: String

    func run() async throws {
        try await client.withClient { vault in
            try ClientOutput.metadata(try await vault.metadata(id), json: client.json)
        }
    }
}
