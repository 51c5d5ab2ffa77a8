import ArgumentParser
import TokenVaultCore

struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List credentials (metadata only).")

    @OptionGroup var options: VaultOptions
    @Argument(help: "Only this namespace.") var namespace: String?
    @Option(help: "Only this status (active, failing, needs_reauth, revoke_pending, expired).") var status: String?
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        try reportingErrors {
            if let namespace { try CredentialID.validateNamespace(namespace) }
            var query = CredentialQuery(namespace: namespace, limit: 500)
            if let status {
                guard let parsed = CredentialStatus(rawValue: status) else {
                    throw VaultError.invalidField("status", "'\(status)' is not a credential status")
                }
                query.status = parsed
            }
            let vault = try OpenedVault.open(options).vault
            var all: [CredentialMetadata] = []
            while true {
                let page = try vault.list(query)
                all += page
                guard page.count == query.limit, let last = page.last else { break }
                query.after = last.id
            }
            if json { return try printJSON(all.map(CredentialMetadataDocument.init)) }
            printTable(
                ["ID", "PROVIDER", "STATUS", "EXPIRES", "REFRESH"],
                all.map { metadata in
                    [
                        metadata.id.description, metadata.provider, metadata.status.rawValue,
                        metadata.expiresAt?.description ?? "-", metadata.hasRefreshToken ? "yes" : "no",
                    ]
                })
        }
    }
}
