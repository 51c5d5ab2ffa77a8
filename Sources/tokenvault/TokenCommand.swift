import ArgumentParser
import Foundation
import TokenVaultCore

struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print the access token of ns/name (never the refresh token).",
        discussion: "Exit code 1 when the token has expired; --json adds token_type, expires_at and id_token.")

    @OptionGroup var options: VaultOptions
    @Argument(help: "Credential id, namespace/name.") var id: CredentialID
    @Option(help: "Fail unless the token stays valid for at least this many seconds.") var minTTL: Int = 0
    @Flag(help: "Print JSON.") var json = false

    struct TokenDocument: Encodable {
        let accessToken: String
        let tokenType: String
        let expiresAt: String?
        let idToken: String?
        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token", tokenType = "token_type", expiresAt = "expires_at", idToken = "id_token"
        }
    }

    func run() throws {
        try reportingErrors {
            let credential = try OpenedVault.open(options).vault.credential(id)
            if let expiresAt = credential.metadata.expiresAt,
                expiresAt < Timestamp.now().adding(seconds: Double(max(minTTL, 0)))
            {
                throw VaultError(
                    code: "token_expired",
                    message: "the access token of \(id) expires at \(expiresAt), sooner than the \(minTTL) s asked for")
            }
            if json {
                try printJSON(
                    TokenDocument(
                        accessToken: credential.secrets.accessToken.revealString(),
                        tokenType: credential.metadata.tokenType ?? "Bearer",
                        expiresAt: credential.metadata.expiresAt?.description,
                        idToken: credential.secrets.idToken?.revealString()))
            } else {
                print(credential.secrets.accessToken.revealString())
            }
        }
    }
}
