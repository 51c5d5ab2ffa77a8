import ArgumentParser
import Foundation
import TokenVaultCore

struct RemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm", abstract: "Delete ns/name from the vault (local only; no provider revocation yet).")

    @OptionGroup var options: VaultOptions
    @Argument(help: "Credential id, namespace/name.") var id: CredentialID

    func run() throws {
        try reportingErrors {
            try OpenedVault.open(options).vault.delete(
                id,
                audit: AuditEvent(
                    at: Timestamp.now(), uid: getuid(), gid: getgid(), pid: getpid(), operation: "credential.delete",
                    credentialID: id, outcome: .succeeded, detail: "cli"))
            print("deleted \(id)")
        }
    }
}
