import ArgumentParser
import Foundation
import TokenVaultClient

struct ExchangeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exchange",
        abstract:
            "Redeem an authorization code (with its PKCE verifier) at a provider and store the result as ns/name.",
        discussion: """
            The daemon calls the provider's token endpoint with its own client credentials, checks the id \
            token (nonce, audience, expiry) and stores the tokens; nothing is stored if anything fails. \
            Prints the access token (never the refresh token); --json for the metadata too.
            """)

    @OptionGroup var client: ClientOptions
    @Argument(help: "Credential id, namespace/name.") var id: String
    @Option(help: "Provider instance name, as configured in the daemon.") var provider: String
    @Option(help: "The authorization code from the mobile SDK or redirect.") var code: String
    @Option(name: .customLong("code-verifier"), help: "The PKCE code verifier (43-128 characters).")
    var codeVerifier: String
    @Option(name: .customLong("redirect-uri"), help: "The redirect URI the authorization request used.")
    var redirectURI: String
    @Option(help: "The nonce the authorization request used; the id token must carry it.") var nonce: String?
    @Option(help: "The authorization response's state (sent to providers that want it, e.g. ESIA).") var state: String?
    @Option(name: .customLong("label"), help: "key=value label; repeatable.") var labels: [String] = []

    func validate() throws { _ = try parseLabels(labels) }

    func run() async throws {
        let parsed = try parseLabels(labels)
        try await client.withClient { vault in
            let (result, _) = try await vault.exchange(
                id, provider: provider, code: code, codeVerifier: codeVerifier, redirectURI: redirectURI,
                nonce: nonce, state: state, labels: parsed)
            if client.json {
                try ClientOutput.metadata(result.credential, json: true)
            } else {
                print(result.token.accessToken)
            }
        }
    }
}
