import ArgumentParser
import Foundation
import TokenVaultClient

struct PutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Store a token payload (T-ID, RFC 6749 token response or EBS verify token) as ns/name.",
        discussion: """
            The payload is JSON, read from --file or standard input. With --client-credentials the \
            daemon obtains the tokens itself by the provider instance's client credentials grant, \
            and renews them before they expire. Prints the stored metadata.
            """)

    @OptionGroup var client: ClientOptions
    @Argument(help: "Credential id, namespace/name.") var id: String
    @Option(help: "Provider instance the credential belongs to (e.g. tinkoff-id).") var provider: String
    @Option(name: .customLong("label"), help: "A label key=value; repeatable.") var labels: [String] = []
    @Option(help: "Read the payload from this file instead of standard input.") var file: String?
    @Flag(help: "Have the daemon obtain the tokens by a client credentials grant instead of reading a payload.")
    var clientCredentials = false
    @Option(name: .customLong("scope"), help: "A scope the grant asks for; repeatable.") var scopes: [String] = []
    @Option(name: .customLong("audience"), help: "An audience the grant asks for; repeatable.")
    var audiences: [String] = []
    @Option(name: .customLong("resource"), help: "A resource (RFC 8707) the grant asks for; repeatable.")
    var resources: [String] = []

    func validate() throws {
        _ = try parseLabels(labels)
        if !clientCredentials, !(scopes.isEmpty && audiences.isEmpty && resources.isEmpty) {
            throw ValidationError("--scope, --audience and --resource go with --client-credentials")
        }
        if clientCredentials, file != nil {
            throw ValidationError("--file and --client-credentials exclude each other")
        }
    }

    func run() async throws {
        if clientCredentials {
            let grant = TokenVaultClient.Metadata.Grant(scopes: scopes, audience: audiences, resource: resources)
            let labelMap = try parseLabels(labels)
            return try await client.withClient { vault in
                let stored = try await vault.put(id, provider: provider, grant: grant, labels: labelMap)
                try ClientOutput.metadata(stored.metadata, json: client.json)
            }
        }
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
