import ArgumentParser
import Foundation
import TokenVaultClient

struct PutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Store a token payload (T-ID, RFC 6749 token response or EBS verify token) as ns/name.",
        discussion: "The payload is JSON, read from --file or standard input. Prints the stored metadata.")

    @OptionGroup var client: ClientOptions
    @Argument(help: "Credential id, namespace/name.") var id: String
    @Option(help: "Provider instance the credential belongs to (e.g. tinkoff-id).") var provider: String
    @Option(name: .customLong("label"), help: "A label key=value; repeatable.") var labels: [String] = []
    @Option(help: "Read the payload from this file instead of standard input.") var file: String?

    func validate() throws { _ = try parseLabels(labels) }

    func run() async throws {
        let payload: Data
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ValidationError("cannot read \(file)")
            }
            payload = data
        } else {
            payload = FileHandle.standardInput.readDataToEndOfFile()
        }
        let labelMap = try parseLabels(labels)
        try await client.withClient { vault in
            let stored = try await vault.put(id, provider: provider, labels: labelMap, token: payload)
            try ClientOutput.metadata(stored.metadata, json: client.json)
        }
    }
}
