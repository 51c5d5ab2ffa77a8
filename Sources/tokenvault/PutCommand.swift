import ArgumentParser
import Foundation
import TokenVaultClient

struct PutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract:
            "Store a token payload (T-ID, RFC 6749 token response or EBS verify token) as ns/name, or have the "
            + "daemon obtain the tokens by a grant.",
        discussion: """
            The payload is JSON, read from --file or standard input. With --client-credentials the \
            daemon obtains the tokens itself by the provider instance's client credentials grant; \
            with --exchange-from, by an RFC 8693 token exchange of that credential's access token. \
            Either way it renews them before they expire. Prints the stored metadata.
            """)

    @OptionGroup var client: ClientOptions
    @Argument(help: "Credential id, namespace/name.") var id: String
    @Option(help: "Provider instance the credential belongs to (e.g. tinkoff-id).") var provider: String
    @Option(name: .customLong("label"), help: "A label key=value; repeatable.") var labels: [String] = []
    @Option(help: "Read the payload from this file instead of standard input.") var file: String?
    @Flag(help: "Have the daemon obtain the tokens by a client credentials grant instead of reading a payload.")
    var clientCredentials = false
    @Option(
        name: .customLong("exchange-from"),
        help: "Have the daemon obtain the tokens by exchanging this credential's access token (RFC 8693).")
    var subject: String?
    @Option(name: .customLong("scope"), help: "A scope the grant asks for; repeatable.") var scopes: [String] = []
    @Option(name: .customLong("audience"), help: "An audience the grant asks for; repeatable.")
    var audiences: [String] = []
    @Option(name: .customLong("resource"), help: "A resource (RFC 8707) the grant asks for; repeatable.")
    var resources: [String] = []
    @Option(help: "The token type a token exchange asks for (access_token or jwt URN).")
    var requestedTokenType: String?

    /// The grant the options name; nil for a payload.
    var grant: TokenVaultClient.Metadata.Grant? {
        if clientCredentials {
            return .init(scopes: scopes, audience: audiences, resource: resources)
        }
        return subject.map {
            .init(
                type: "token_exchange", scopes: scopes, audience: audiences, resource: resources, subject: $0,
                requestedTokenType: requestedTokenType)
        }
    }

    func validate() throws {
        _ = try parseLabels(labels)
        if clientCredentials, subject != nil {
            throw ValidationError("--client-credentials and --exchange-from exclude each other")
        }
        if grant == nil, !(scopes.isEmpty && audiences.isEmpty && resources.isEmpty) {
            throw ValidationError("--scope, --audience and --resource go with --client-credentials or --exchange-from")
        }
        if subject == nil, requestedTokenType != nil {
            throw ValidationError("--requested-token-type goes with --exchange-from")
        }
        if grant != nil, file != nil {
            throw ValidationError("--file reads a payload; a grant has the daemon obtain the tokens")
        }
    }

    func run() async throws {
        if let grant {
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
