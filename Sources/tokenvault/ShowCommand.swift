import ArgumentParser
import TokenVaultCore

struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show the metadata of ns/name (no secrets).")

    @OptionGroup var options: VaultOptions
    @Argument(help: "Credential id, namespace/name.") var id: CredentialID
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        try reportingErrors {
            try MetadataOutput.print(try OpenedVault.open(options).vault.metadata(id), json: json)
        }
    }
}

/// Metadata as a key/value listing or JSON.
enum MetadataOutput {
    static func print(_ metadata: CredentialMetadata, json: Bool) throws {
        let document = CredentialMetadataDocument(metadata)
        if json { return try printJSON(document) }
        let rows: [(String, String?)] = [
            ("id", document.id), ("provider", document.provider), ("kind", document.kind),
            ("status", document.status), ("generation", String(document.generation)),
            ("subject", document.subject), ("token type", document.tokenType),
            ("scopes", document.scopes.joined(separator: " ")),
            ("labels", document.labels.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }.joined(separator: ",")),
            ("issued at", document.issuedAt), ("expires at", document.expiresAt ?? "unknown"),
            ("refresh at", document.refreshAt ?? "never"),
            ("refresh token", document.hasRefreshToken ? "stored" : "none"),
            ("id token", document.hasIDToken ? "stored" : "none"),
            ("last error", document.lastError.map { "\($0.code): \($0.message)" }),
        ]
        printTable(["field", "value"], rows.compactMap { key, value in value.map { [key, $0] } })
    }
}
