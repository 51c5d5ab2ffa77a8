import ArgumentParser
import Foundation

@main
struct TokenVaultCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokenvault",
        abstract: "Keeps OAuth/OIDC credentials sealed in SQLite and hands out fresh access tokens.",
        discussion: """
            status, put, token, show, ls, rm, audit and watch talk to the daemon (tokenvault serve) over its \
            socket; init, rotate-key, rekey, verify and restore work on the database directly; backup goes \
            through the daemon when one runs.

            Exit codes: 0 success; 1 error; 2 `status`: the daemon is degraded; 3 credential not found; \
            4 `verify` found a problem; \
            5 daemon unreachable; 6 permission denied; 64 bad usage.
            """,
        version: tokenVaultVersion,
        subcommands: [
            ServeCommand.self, InitCommand.self, StatusCommand.self, PutCommand.self, TokenCommand.self,
            ShowCommand.self, ListCommand.self, CallCommand.self, MCPCommand.self,
            AuditCommand.self, WatchCommand.self, RefreshCommand.self, ExchangeCommand.self, AuthorizeCommand.self,
            LoginCommand.self,
            RemoveCommand.self, RotateKeyCommand.self, RekeyCommand.self, VerifyCommand.self, BackupCommand.self,
            RestoreCommand.self, MigrateStoreCommand.self, NodesCommand.self, WebhooksCommand.self,
            CourierCommand.self, ProvidersCommand.self, TokenExchangeCommand.self,
        ])

    /// Every file TokenVault creates (database, WAL, keys) is private to its user from birth.
    static func restrictFileCreation() { umask(0o077) }
}
