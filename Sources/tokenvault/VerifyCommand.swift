import ArgumentParser
import TokenVaultCore

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract:
            "Run PRAGMA integrity_check, open every sealed field and check the audit trail's chain; report counts and failures (no secrets).",
        discussion: "Exit code 4 when anything is wrong.")

    @OptionGroup var options: VaultOptions
    @Flag(help: "Print JSON.") var json = false

    struct Document: Encodable {
        let integrityCheck: [String]
        let credentials: Int
        let sealedFields: Int
        let keyTerms: [UInt32]
        let auditRows: Int
        let auditRowsUnchained: Int
        let failures: [String]
        let ok: Bool
        enum CodingKeys: String, CodingKey {
            case integrityCheck = "integrity_check", credentials, sealedFields = "sealed_fields"
            case keyTerms = "key_terms", auditRows = "audit_rows", auditRowsUnchained = "audit_rows_unchained"
            case failures, ok
        }
    }

    func run() throws {
        var clean = true
        try reportingErrors {
            let opened = try OpenedVault.open(options)
            let integrity = try opened.database.integrityCheck()
            let report = try opened.vault.verify()
            let audit = try opened.vault.verifyAudit()
            clean = integrity == ["ok"] && report.isClean && audit.isClean
            let failures = report.failures + audit.failures
            let document = Document(
                integrityCheck: integrity, credentials: report.credentials, sealedFields: report.sealedFields,
                keyTerms: opened.keyring.knownTerms, auditRows: audit.rows, auditRowsUnchained: audit.unchainedRows,
                failures: failures, ok: clean)
            if json { return try printJSON(document) }
            print("integrity_check: \(integrity.joined(separator: "; "))")
            print("key terms: \(document.keyTerms.map(String.init).joined(separator: ", "))")
            print(
                "credentials: \(report.credentials), sealed fields opened: \(report.sealedFields - report.failures.count)"
            )
            print("audit rows: \(audit.rows) (\(audit.unchainedRows) from before the chain)")
            print("failures: \(failures.count)")
            for failure in failures { print("  \(failure)") }
        }
        if !clean { throw ExitCode(4) }
    }
}
