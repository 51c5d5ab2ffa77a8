import ArgumentParser
import Foundation
import TokenVaultClient

struct RemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Revoke ns/name at its provider, then delete it.",
        discussion: """
            If the provider cannot confirm revocation, the credential stays revoke_pending (its \
            tokens are no longer served; the daemon retries) and the command exits 2. --force \
            deletes it anyway.
            """)

    @OptionGroup var client: ClientOptions
    @Argument(help: "Credential id, namespace/name.") var id: String
    @Flag(help: "Delete even if revocation at the provider fails.") var force = false

    func run() async throws {
        try await client.withClient { vault in
            switch try await vault.delete(id, force: force) {
            case .deleted(revoked: true):
                print("revoked at the provider and deleted \(id)")
            case .deleted(revoked: false):
                print("deleted \(id) (not revoked at the provider: it has no revocation endpoint, or --force)")
            case .deleted(revoked: nil):
                print("deleted \(id)")
            case .revocationPending(let metadata):
                let reason = metadata.lastError.map { "\($0.code): \($0.message)" } ?? "unknown"
                TerminalText.error(
                    "tokenvault: \(id) could not be revoked at the provider (\(reason)); it stays "
                        + "revoke_pending and the daemon retries. Use --force to delete it anyway.")
                throw ExitCode(2)
            }
        }
    }
}
