import ArgumentParser
import TokenVaultClient

/// `tokenvault token-exchange ns/name --audience A`: a token derived from the credential's by RFC
/// 8693 (POST .../token-exchange, permission token:exchange).
struct TokenExchangeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token-exchange",
        abstract: "Print a token derived from ns/name's by RFC 8693 (another audience, a narrower scope).",
        discussion: """
            The daemon sends the credential's access token to the provider's token endpoint and prints the \
            derived access token; the credential's own tokens are never printed. Give at least one of \
            --audience, --resource and --scope. --json adds token_type, issued_token_type, expires_at and scopes.
            """)

    @OptionGroup var client: ClientOptions
    @Argument(help: "Credential id, namespace/name.") var id: String
    @Option(help: "An audience the token is for; repeatable.") var audience: [String] = []
    @Option(help: "An RFC 8707 resource the token is for; repeatable.") var resource: [String] = []
    @Option(name: .customLong("scope"), help: "A scope to ask for; repeatable.") var scopes: [String] = []
    @Option(
        name: .customLong("requested-token-type"),
        help: "urn:ietf:params:oauth:token-type:access_token (the server's usual answer) or …:jwt.")
    var requestedTokenType: String?

    func run() async throws {
        try await client.withClient { vault in
            let token = try await vault.exchangeToken(
                id, audience: audience, resource: resource, scopes: scopes, requestedTokenType: requestedTokenType)
            if client.json {
                try printJSON(token)
            } else {
                print(token.accessToken)
            }
        }
    }
}
