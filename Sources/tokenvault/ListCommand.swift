import ArgumentParser
import TokenVaultClient

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List credentials (metadata only).")

    @OptionGroup var client: ClientOptions
    @Argument(help: "Only this namespace.") var namespace: String?
    @Option(help: "Only this status (active, failing, needs_reauth, revoke_pending, expired).") var status: String?

    func run() async throws {
        try await client.withClient { vault in
            let all = try await vault.listAll(namespace: namespace, status: status)
            if client.json { return try printJSON(all) }
            printTable(
                ["ID", "PROVIDER", "STATUS", "EXPIRES", "REFRESH"],
                all.map {
                    [
                        $0.id, $0.provider, $0.status, $0.expiresAt ?? "-",
                        $0.grant != nil ? "grant" : $0.hasRefreshToken ? "yes" : "no",
                    ]
                })
        }
    }
}
