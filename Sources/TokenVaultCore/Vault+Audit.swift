/// The audit trail, written, chained, pruned and verified by the ledger: every row (the ones a
/// write carries in its own transaction, and the recorder's batches) is appended by
/// `appendChained`, which links it to the chain's head inside the same transaction.
extension Vault {
    var auditChain: AuditChain { AuditChain(mac: { [sealer] in sealer.auditMAC($0) }) }

    /// Appends `events` as one write of the group commit (the audit recorder's batches).
    public func appendAudits(_ events: [AuditEvent]) async throws {
        guard !events.isEmpty else { return }
        let chain = auditChain
        try await writes.write(.normal) { writer in try Self.appendChained(events, chain: chain, writer) }
    }

    /// Links `events` to the chain's head and inserts them, inside the caller's transaction.
    static func appendChained(_ events: [AuditEvent], chain: AuditChain, _ writer: any CredentialWriter) throws {
        guard !events.isEmpty else { return }
        let head = try writer.auditChainEnd(.head)
        let last = try writer.lastAuditRow()
        // The head is the authority on where the chain ends: a row deleted from the end breaks
        // the chain instead of being quietly chained over. (The anchor, the last row pruned, is
        // never past the head.)
        var previous = head?.mac ?? last?.mac
        var id = max(last?.id ?? 0, head?.rowID ?? 0)
        var rows: [StoredAuditEvent] = []
        rows.reserveCapacity(events.count)
        for event in events {
            id += 1
            let mac = chain.link(previous: previous, id: id, event: event)
            rows.append(StoredAuditEvent(id: id, event: event, mac: mac))
            previous = mac
        }
        try writer.insertAudits(rows)
        if let mac = previous, let seal = chain.seal(.head, rowID: id, mac: mac) {
            try writer.setAuditChainEnd(AuditChainEnd(name: .head, rowID: id, mac: mac, seal: seal))
        }
    }

    /// Audit rows with id greater than `after`, oldest first, optionally about one credential.
    public func auditEvents(after: Int64?, credentialID: CredentialID?, limit: Int) throws -> [StoredAuditEvent] {
        try store.auditEvents(after: after, credentialID: credentialID, limit: limit)
    }

    /// Deletes, `batch` rows per transaction, rows older than `before` and the oldest rows beyond
    /// `keepingAtMost`, moving the chain's anchor to the last row deleted. Returns how many went.
    @discardableResult
    public func pruneAudit(before: Timestamp, keepingAtMost maximumRows: Int, batch: Int = 1000) async throws -> Int {
        let chain = auditChain
        var pruned = 0
        while true {
            let deleted = try await writes.write(.normal) { writer -> Int in
                guard let span = try writer.auditRowSpan() else { return 0 }
                // By count: the oldest rows beyond the maximum (ids are consecutive).
                let excess = max(0, span.last - span.first + 1 - Int64(maximumRows))
                var through = span.first - 1 + min(excess, Int64(batch))
                // By age: the oldest rows, as far as they are older than `before`.
                for row in try writer.auditRows(after: span.first - 1, limit: batch) {
                    guard (row.event.lastAt ?? row.event.at) < before else { break }
                    through = max(through, row.id)
                }
                guard through >= span.first, let last = try writer.auditRow(through) else { return 0 }
                let removed = try writer.deleteAudits(through: through)
                if let mac = last.mac, let seal = chain.seal(.anchor, rowID: through, mac: mac) {
                    try writer.setAuditChainEnd(AuditChainEnd(name: .anchor, rowID: through, mac: mac, seal: seal))
                }
                return removed
            }
            pruned += deleted
            if deleted < batch { return pruned }
        }
    }

    /// Walks the chain from its anchor to its head and reports every row that does not verify:
    /// edited, removed from the middle or the end, or chain ends that were moved.
    public func verifyAudit(batchSize: Int = 1000) throws -> AuditVerification {
        let chain = auditChain
        var report = AuditVerification()
        let ends = try store.auditChainEnds()
        let anchor = ends.first { $0.name == .anchor }
        let head = ends.first { $0.name == .head }
        for end in [anchor, head].compactMap({ $0 })
        where chain.seal(end.name, rowID: end.rowID, mac: end.mac).map({ $0 != end.seal }) ?? false {
            report.failures.append("audit chain \(end.name.rawValue) (row \(end.rowID)) was altered")
        }
        // Where the chain stands: the last row seen (or the anchor), and whether the chain had
        // begun (rows before version 3 carry no MAC and are not covered).
        var previous: (id: Int64, mac: [UInt8]?) = (anchor?.rowID ?? 0, anchor?.mac)
        var chained = anchor != nil
        while true {
            let rows = try store.auditEvents(
                after: previous.id == 0 ? nil : previous.id, credentialID: nil, limit: batchSize)
            guard !rows.isEmpty else { break }
            for row in rows {
                report.rows += 1
                defer { previous = (row.id, row.mac) }
                guard let mac = row.mac else {
                    if chained {
                        report.failures.append("audit row \(row.id) has lost its MAC")
                    } else {
                        report.unchainedRows += 1
                    }
                    continue
                }
                chained = true
                if row.id != previous.id + 1 {
                    report.failures.append(Self.removed(previous.id + 1, row.id - 1))
                } else if chain.link(previous: previous.mac, id: row.id, event: row.event).map({ $0 != mac }) ?? false {
                    report.failures.append("audit row \(row.id) was edited (or the row before it was replaced)")
                }
            }
        }
        if let head {
            if previous.id < head.rowID {
                report.failures.append(Self.removed(previous.id + 1, head.rowID) + " from the end")
            } else if previous.id == head.rowID, previous.mac != head.mac {
                report.failures.append("audit row \(previous.id) does not match the chain's head")
            }
        }
        return report
    }

    private static func removed(_ first: Int64, _ last: Int64) -> String {
        first == last ? "audit row \(first) was removed" : "audit rows \(first)-\(last) were removed"
    }
}

/// What `Vault.verifyAudit` found.
public struct AuditVerification: Sendable, Equatable {
    public var rows = 0
    /// Rows written before the chain existed (schema version 3); they are not covered.
    public var unchainedRows = 0
    public var failures: [String] = []
    public var isClean: Bool { failures.isEmpty }

    public init() {}
}
