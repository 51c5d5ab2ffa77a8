import ArgumentParser
import Foundation
import TokenVaultClient
import TokenVaultCore
import TokenVaultLedger
import TokenVaultServer

struct RotateKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate-key",
        abstract: "Add a new data key term, re-seal every credential under it in batches, drop unused terms.",
        discussion: """
            While a daemon serves the vault, the rotation is done by the daemon (through its \
            POST /v1/admin/rotate-key, on the socket its lock file names), so its own writes \
            coordinate with it; reads and writes go on meanwhile. Without a daemon it runs here, \
            holding the vault's lock so that no daemon starts under it. With --resume, no term is \
            added: an interrupted rotation is finished (not through a daemon).
            """)

    @OptionGroup var options: VaultOptions
    @Option(help: "Credentials re-sealed per transaction.") var batchSize: Int = 200
    @Flag(help: "Finish moving rows to the current active term without adding a new one.") var resume = false

    func run() async throws {
        try await reportingErrorsAsync {
            guard batchSize > 0 else { throw VaultError.invalidField("--batch-size", "must be positive") }
            TokenVaultCommand.restrictFileCreation()
            try OpenedVault.requireVault(options)
            if let daemon = DatabaseLock.holder(databasePath: options.databasePath) {
                try await rotateThroughDaemon(daemon)
                return
            }
            let lock = try DatabaseLock(databasePath: options.databasePath, role: "rotate-key")
            defer { withExtendedLifetime(lock) {} }
            let opened = try OpenedVault.open(options)
            defer { opened.database.close() }
            // The rotation's webhook event goes to the configuration's endpoints, as a daemon's would.
            opened.vault.install(webhooks: try options.loadConfiguration().webhooks.routes)
            let rotation = KeyRotation(
                vault: opened.vault, keyring: opened.keyring, terms: opened.database, batchSize: batchSize)
            let report =
                resume
                ? try await rotation.finish(onto: opened.keyring.activeTerm) : try await rotation.rotate()
            print("active data key term: \(report.newTerm)")
            print("credentials re-sealed: \(report.resealed)")
            print("terms removed: \(report.removedTerms.map(String.init).joined(separator: ", "))")
            if !report.remainingTerms.isEmpty {
                print(
                    "terms still in use: " + report.remainingTerms.map(String.init).joined(separator: ", ")
                        + "; run `tokenvault rotate-key --resume` to finish")
            }
        }
    }

    /// A daemon holds the vault: it rotates (its keyring and its commits stay consistent), or,
    /// if it cannot be reached, nothing happens and the message says who holds the vault.
    private func rotateThroughDaemon(_ daemon: DatabaseLock.Holder) async throws {
        guard !resume, daemon.role == "daemon", let socket = daemon.socket else {
            throw VaultError(
                code: .daemonRunning,
                message: "\(daemon) holds \(options.databasePath); "
                    + (resume
                        ? "stop it to finish a rotation here, or rotate through it: tokenvault rotate-key"
                        : "try again when it is done"))
        }
        let client = TokenVaultClient(socketPath: socket)
        do {
            let report = try await client.rotateKey(timeout: .seconds(3600))
            try? await client.shutdown()
            print("rotated by the running daemon (pid \(daemon.pid.map(String.init) ?? "?"), socket \(socket))")
            print("active data key term: \(report.newTerm)")
            print("credentials re-sealed: \(report.resealed)")
            print("terms removed: \(report.removedTerms.map(String.init).joined(separator: ", "))")
        } catch let error as TokenVaultClientError {
            try? await client.shutdown()
            throw VaultError(
                code: .daemonRunning,
                message: "\(daemon) holds \(options.databasePath), and asking it to rotate failed (\(error)); "
                    + "rotate through its API as an admin: curl --unix-socket \(socket) -X POST "
                    + "http://localhost/v1/admin/rotate-key")
        }
    }
}
