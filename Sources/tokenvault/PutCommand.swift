import ArgumentParser
import Foundation
import TokenVaultCore

struct PutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Store a token payload (T-ID, RFC 6749 token response or EBS verify token) as ns/name.",
        discussion: "The payload is JSON, read from --file or standard input. Prints the stored metadata.")

    @OptionGroup var options: VaultOptions
    @Argument(help: "Credential id, namespace/name.") var id: CredentialID
    @Option(help: "Provider instance the credential belongs to (e.g. tinkoff-id).") var provider: String
    @Option(name: .customLong("label"), help: "A label key=value; repeatable.") var labels: [String] = []
    @Option(help: "Read the payload from this file instead of standard input.") var file: String?
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        try reportingErrors {
            let body: Data
            if let file {
                guard let data = FileManager.default.contents(atPath: file) else {
                    throw VaultError.invalidPayload("cannot read \(file)")
                }
                body = data
            } else {
                body = FileHandle.standardInput.readDataToEndOfFile()
            }
            let payload = try TokenPayloadDecoder().decode(body)
            let opened = try OpenedVault.open(options)
            let metadata = try opened.vault.put(
                id, payload: payload, provider: provider, labels: try parsedLabels(),
                audit: AuditEvent(
                    at: Timestamp.now(), uid: getuid(), gid: getgid(), pid: getpid(), operation: "credential.put",
                    credentialID: id, outcome: .succeeded, detail: "cli"))
            try MetadataOutput.print(metadata, json: json)
        }
    }

    private func parsedLabels() throws -> [String: String] {
        var result: [String: String] = [:]
        for label in labels {
            let parts = label.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { throw VaultError.invalidField("label", "'\(label)' is not key=value") }
            result[String(parts[0])] = String(parts[1])
        }
        return result
    }
}
