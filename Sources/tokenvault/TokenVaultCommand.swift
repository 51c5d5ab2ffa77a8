import ArgumentParser
import Foundation

@main
struct TokenVaultCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokenvault",
        abstract: "Keeps OAuth/OIDC credentials sealed in SQLite and hands out fresh access tokens.",
        discussion: """
            Exit codes: 0 success; 1 error; 2 bad usage; 3 credential not found; \
            4 `verify` found a problem.
            """,
        subcommands: [
            ServeCommand.self, InitCommand.self, PutCommand.self, TokenCommand.self, ShowCommand.self, ListCommand.self,
            RemoveCommand.self, RotateKeyCommand.self, RekeyCommand.self, VerifyCommand.self,
        ])

    /// Every file TokenVault creates (database, WAL, keys) is private to its user from birth.
    static func restrictFileCreation() { umask(0o077) }
}
