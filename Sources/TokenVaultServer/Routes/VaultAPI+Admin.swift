import Foundation
import Hummingbird
import TokenVaultCore

extension VaultAPI {
    func rotateKey(_ context: VaultRequestContext) async throws -> Response {
        let peer = try await authoriseAdmin(context, operation: .adminRotateKey)
        guard let rotation else {
            throw ProblemDetails(.conflict, detail: "this vault's keyring cannot rotate")
        }
        let report = try await rotation.rotate()
        audit.record(auditEvent(peer, .adminRotateKey, nil, .succeeded, detail: "term \(report.newTerm)"))
        context.logger.notice(
            "data key rotated",
            metadata: ["tokenvault.key.term": "\(report.newTerm)", "tokenvault.key.resealed": "\(report.resealed)"])
        return try json(
            RotateKeyDocument(
                newTerm: report.newTerm, resealed: report.resealed, removedTerms: report.removedTerms,
                remainingTerms: report.remainingTerms))
    }

    func auditTrail(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let parameters = request.uri.queryParameters
        let limit = try PageSize.parse(parameters.get("limit"))
        let cursor = try parameters.get("cursor").map { text in
            guard let value = Int64(text), value >= 0 else {
                throw VaultError.invalidField("cursor", "must be the next_cursor of a previous page")
            }
            return value
        }
        let credential = try parameters.get("credential").map { try CredentialID($0) }
        let order = try parameters.get("order").map { text in
            guard let order = AuditQuery.Order(rawValue: text) else {
                throw VaultError.invalidField("order", "must be newest or oldest")
            }
            return order
        }
        _ = try await authoriseAdmin(context, operation: .adminAudit)
        await audit.flush()
        let rows = try await vault.auditEvents(
            AuditQuery(order ?? .newestFirst, cursor: cursor, credentialID: credential, limit: limit))
        return try json(
            PageDocument(
                items: rows.map(AuditEventDocument.init),
                nextCursor: rows.count == limit ? rows.last.map { String($0.id) } : nil))
    }

    func backup(_ context: VaultRequestContext) async throws -> Response {
        let peer = try await authoriseAdmin(context, operation: .adminBackup)
        let path = BackupFile.path(in: options.backupDirectory, at: vault.clock.now)
        let name = (path as NSString).lastPathComponent
        try await BlockingWork.run { try BackupFile.createDirectory(options.backupDirectory) }
        let bytes = try await admin.backup(to: path)
        audit.record(auditEvent(peer, .adminBackup, nil, .succeeded, detail: name))
        return try json(BackupDocument(path: path, bytes: bytes))
    }

    /// Health and what an operator looks at next: credentials by status, the next scheduled
    /// refresh, the audit trail's size. Counts the database cannot give now are left out (null).
    func status(_ context: VaultRequestContext) async throws -> Response {
        _ = try await authoriseAdmin(context, operation: .adminStatus)
        let health = try await healthDocument()
        async let countsRead = try? admin.credentialCountsByStatus()
        async let nextRead = try? vault.earliestRefreshAt()
        async let auditRowsRead = try? admin.auditRowCount()
        let (counts, next, auditRows) = await (countsRead, nextRead, auditRowsRead)
        let recorder = audit.counters
        return try json(
            StatusDocument(
                health: health,
                credentials: counts.map { counts in
                    Dictionary(uniqueKeysWithValues: CredentialStatus.stored.map { ($0.rawValue, counts[$0] ?? 0) })
                },
                nextRefreshAt: next?.description,
                audit: .init(rows: auditRows, pending: recorder.pending, writeFailures: recorder.writeFailures)))
    }
}
