import ArgumentParser
import TokenVaultCore
import TokenVaultCourier

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract:
            "Run PRAGMA integrity_check, open every sealed field, check the audit trail's chain and the spool; report counts and failures (no secrets).",
        discussion: "Exit code 4 when anything is wrong.")

    @OptionGroup var options: VaultOptions
    @Flag(help: "Print JSON.") var json = false

    struct Document: Encodable {
        let integrityCheck: [String]
        let credentials: Int
        let sealedFields: Int
        let sealedFieldsOpened: Int
        let keyTerms: [UInt32]
        let auditRows: Int
        let auditRowsUnchained: Int
        /// Answers a courier spooled that the daemon commits at its next start.
        let spoolPending: Int
        let failures: [String]
        let ok: Bool
        enum CodingKeys: String, CodingKey {
            case integrityCheck = "integrity_check", credentials, sealedFields = "sealed_fields"
            case sealedFieldsOpened = "sealed_fields_opened"
            case keyTerms = "key_terms", auditRows = "audit_rows", auditRowsUnchained = "audit_rows_unchained"
            case spoolPending = "spool_pending"
            case failures, ok
        }
    }

    func run() async throws {
        var clean = true
        try await reportingErrorsAsync {
            let opened = try OpenedVault.open(options)
            let document = try await Self.check(opened, spoolDirectory: options.resolvedDataDir + "/spool")
            clean = document.ok
            let failures = document.failures
            if json { return try printJSON(document) }
            print("integrity_check: \(document.integrityCheck.joined(separator: "; "))")
            print("key terms: \(document.keyTerms.map(String.init).joined(separator: ", "))")
            print("credentials: \(document.credentials), sealed fields opened: \(document.sealedFieldsOpened)")
            print("audit rows: \(document.auditRows) (\(document.auditRowsUnchained) from before the chain)")
            print("spooled answers waiting for the daemon's next start: \(document.spoolPending)")
            print("failures: \(failures.count)")
            for failure in failures { print("  \(failure)") }
        }
        if !clean { throw ExitCode(4) }
    }

    /// Every check on an opened vault; `spoolDirectory` nil leaves the spool out (a backup has none).
    static func check(_ opened: OpenedVault, spoolDirectory: String?) async throws -> Document {
        let integrity = try opened.database.integrityCheck()
        let report = try await opened.vault.verify()
        let audit = try await opened.vault.verifyAudit()
        var spool: (pending: Int, failures: [String]) = (0, [])
        if let spoolDirectory { spool = try await checkSpool(spoolDirectory, opened: opened) }
        let failures = report.failures + audit.failures + spool.failures
        return Document(
            integrityCheck: integrity, credentials: report.credentials, sealedFields: report.sealedFields,
            sealedFieldsOpened: report.sealedFields - report.failures.count, keyTerms: opened.keyring.knownTerms,
            auditRows: audit.rows, auditRowsUnchained: audit.unchainedRows, spoolPending: spool.pending,
            failures: failures, ok: integrity == ["ok"] && failures.isEmpty)
    }

    /// Every spool file must open with this vault's key and belong to a call still waiting: an
    /// open refresh attempt, a code exchange (stored at the next start), a pending revocation.
    static func checkSpool(_ directory: String, opened: OpenedVault) async throws -> (pending: Int, failures: [String])
    {
        let spool = Spool(directory: directory)
        let open = Set(try await opened.vault.openAttempts(limit: 1_000_000).map { "refresh:" + $0.attemptID })
        var pending = 0
        var failures: [String] = []
        for file in spool.files() {
            do throws(Spool.Refusal) {
                let entry = try spool.read(file) { try opened.keyring.openSpooled($0) }
                if open.contains(entry.key) || entry.key.hasPrefix("exchange:") || entry.key.hasPrefix("revoke:") {
                    pending += 1
                } else {
                    failures.append(
                        "spool file \(file) holds an answer for \(entry.key), which has no open attempt (committed or "
                            + "abandoned already): remove the file")
                }
            } catch {
                failures.append(error.description)
            }
        }
        return (pending, failures)
    }
}
