import ArgumentParser
import Foundation
import TokenVaultClient

struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a fresh access token of ns/name (never the refresh token).",
        discussion: "--json adds token_type, expires_at and id_token. Exit code 1 when no token lives long enough.")

    @OptionGroup var client: ClientOptions
    @Argument(help: "Credential id, namespace/name.") var id: String
    @Option(name: .customLong("min-ttl"), help: "Seconds the token must stay valid.") var minTTL: Int?

    func run() async throws {
        try await client.withClient { vault in
            let token = try await vault.token(id, minTTL: minTTL)
            if client.json {
                try printJSON(
                    [
                        "access_token": token.accessToken, "token_type": token.tokenType,
                        "expires_at": token.expiresAt, "id_token": token.idToken,
                    ].compactMapValues { $0 })
            } else {
                print(token.accessToken)
            }
        }
    }
}
