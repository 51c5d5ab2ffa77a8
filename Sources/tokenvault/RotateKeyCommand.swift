import ArgumentParser
import TokenVaultCore

struct RotateKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate-key",
        abstract: "Add a new data key term, re-seal every credential under it in batches, drop unused terms.",
        discussion: """
            Reads and writes continue during the re-seal (each batch is its own short transaction). \
            With --resume, no term is added: an interrupted rotation is finished.
            """)

    @OptionGroup var options: VaultOptions
    @Option(help: "Credentials re-sealed per transaction.") var batchSize: Int = 200
    @Flag(help: "Finish moving rows to the current active term without adding a new one.") var resume = false

    func run() throws {
        try reportingErrors {
            guard batchSize > 0 else { throw VaultError.invalidField("--batch-size", "must be positive") }
            let opened = try OpenedVault.open(options)
            let rotation = KeyRotation(
                vault: opened.vault, keyring: opened.keyring, terms: opened.database, batchSize: batchSize)
            let report =
                resume
                ? try rotation.finish(onto: opened.keyring.activeTerm) : try rotation.rotate()
            print("active data key term: \(report.newTerm)")
            print("credentials re-sealed: \(report.resealed)")
            print("terms removed: \(report.removedTerms.map(String.init).joined(separator: ", "))")
            if !report.remainingTerms.isEmpty {
                print(
                    "terms still in use (rows written by another process during rotation): "
                        + report.remainingTerms.map(String.init).joined(separator: ", ")
                        + "; run `tokenvault rotate-key --resume` to finish")
            }
        }
    }
}
