import ArgumentParser
import TokenVaultClient

struct RemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm", abstract: "Delete ns/name (local only until provider revocation lands).")

    @OptionGroup var client: ClientOptions
    @Argument(help: "Credential id, namespace/name.") var id: String

    func run() async throws {
        try await client.withClient { vault in
            _ = try await vault.delete(id)
            print("deleted \(id)")
        }
    }
}
