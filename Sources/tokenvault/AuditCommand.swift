import ArgumentParser
import TokenVaultClient
import TokenVaultCore

struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Show the audit trail, newest first (admins only): who did what to which credential.")

    @OptionGroup var client: ClientOptions
    @Option(help: "Only rows about this credential (namespace/name).") var credential: String?
    @Option(help: "At most this many rows.") var limit: Int = PageSize.standard
    @Flag(help: "The oldest rows first instead.") var oldestFirst = false

    func run() async throws {
        try await client.withClient { vault in
            let page = try await vault.auditEvents(limit: limit, credential: credential, oldestFirst: oldestFirst)
            if client.json { return try printJSON(page.items) }
            printTable(
                ["AT", "UID", "PID", "OPERATION", "CREDENTIAL", "OUTCOME", "COUNT", "DETAIL"],
                page.items.map { event in
                    [
                        event.at, event.uid.map(String.init) ?? "-", event.pid.map(String.init) ?? "-", event.operation,
                        event.credentialID ?? "-", event.outcome, String(event.count), event.detail ?? "",
                    ]
                })
        }
    }
}
