import ArgumentParser
import TokenVaultClient

struct RefreshCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refresh",
        abstract: "Refresh ns/name now (at most once per limits.on_demand_refresh_seconds per credential).")

    @OptionGroup var client: ClientOptions
    @Argument(help: "Credential id, namespace/name.") var id: String

    func run() async throws {
        try await client.withClient { vault in
            try ClientOutput.metadata(try await vault.refresh(id), json: client.json)
        }
    }
}
