import TokenVaultCore

/// The audit trail, written, chained, pruned and verified by the ledger: every row (the ones a
/// write carries in its own transaction, and the recorder's batches) is appended by
/// `appendChained` (through `auditAppender`), which links it to the head of this process's chain inside the same
/// transaction.
extension Vault {
    var auditChain: AuditChain { AuditChain(mac: { [sealer] in sealer.auditMAC($0) }) }

    /// What a write closure takes along to append to this process's chain.
    var auditAppender: AuditAppender { AuditAppender(chain: auditChain, name: options.auditChain) }

    struct AuditAppender: Sendable {
        let chain: AuditChain
        let name: String

        func callAsFunction(_ events: [AuditEvent], _ writer: any CredentialWriter) async throws {
            try await Vault.appendChained(events, chain: chain, name, writer)
        }
    }

    /// Appends `events` as one write of the group commit (the audit recorder's batches).
    public func appendAudits(_ events: [AuditEvent]) async throws {
        guard !events.isEmpty else { return }
        let append = auditAppender
        try await writes.write(.normal) { writer in try await append(events, writer) }
    }

    /// Links `events` to the head of chain `name` and inserts them, inside the caller's transaction.
    static func appendChained(
        _ events: [AuditEvent], chain: AuditChain, _ name: String, _ writer: any CredentialWriter
    ) async throws {
        guard !events.isEmpty else { return }
        try await writer.lockAuditChain(name)
        // The head is the authority on where the chain ends: a row deleted from the end breaks
        // the chain instead of being quietly chained over. (The anchor, the last row pruned, is
        // never past the head.) Without one, the chain is new, or holds only rows written
        // before chains existed.
        var previous: [UInt8]?
        var position: Int64 = 0
        if let head = try await writer.auditChainEnd(.head, of: name) {
            (previous, position) = (head.mac, head.position)
        } else if let last = try await writer.lastAuditRow(in: name) {
            (previous, position) = (last.mac, last.position)
        }
        var rows: [StoredAuditEvent] = []
        rows.reserveCapacity(events.count)
        for (id, event) in await zip(try writer.newAuditIDs(events.count), events) {
            position += 1
            var row = StoredAuditEvent(id: id, chain: name, position: position, event: event)
            row.mac = chain.link(previous: previous, row: row)
            rows.append(row)
            previous = row.mac
        }
        try await writer.insertAudits(rows)
        if let last = rows.last, let mac = last.mac, let head = chain.sealed(.head, at: last, mac: mac) {
            try await writer.setAuditChainEnd(head)
        }
    }

    /// The audit rows `query` names, in its order.
    public func auditEvents(_ query: AuditQuery) async throws -> [StoredAuditEvent] {
        try await store.auditEvents(query)
    }

    /// Deletes, `batch` rows per transaction, rows older than `before` and the oldest rows beyond
    /// `keepingAtMost`, moving each chain's anchor to its last row deleted. Returns how many went.
    @discardableResult
    public func pruneAudit(before: Timestamp, keepingAtMost maximumRows: Int, batch: Int = 1000) async throws -> Int {
        let chain = auditChain
        var pruned = 0
        // Counted once (a count reads every row); what each batch deletes is taken off it.
        var excess: Int?
        while true {
            let known = excess
            let (deleted, left) = try await writes.write(.normal) { writer -> (Int, Int) in
                let over: Int
                if let known { over = known } else { over = max(0, try await writer.auditRowCount() - maximumRows) }
                let oldest = try await writer.auditRows(after: 0, limit: batch)
                // By count: the oldest rows beyond the maximum; by age: as far as they are older.
                var taken = min(over, oldest.count)
                while taken < oldest.count, (oldest[taken].event.lastAt ?? oldest[taken].event.at) < before {
                    taken += 1
                }
                guard taken > 0 else { return (0, over) }
                let gone = oldest[..<taken]
                // The rows read, not "every id up to": on PostgreSQL a row another node numbered
                // lower may commit meanwhile, and it belongs after its chain's anchor.
                let removed = try await writer.deleteAudits(gone.map(\.id))
                var lastOfChain: [String: StoredAuditEvent] = [:]
                for row in gone { lastOfChain[row.chain] = row }
                for row in lastOfChain.values.sorted(by: { $0.id < $1.id }) {
                    if let mac = row.mac, let anchor = chain.sealed(.anchor, at: row, mac: mac) {
                        try await writer.setAuditChainEnd(anchor)
                    }
                }
                return (removed, max(0, over - removed))
            }
            pruned += deleted
            excess = left
            if deleted < batch { return pruned }
        }
    }

    /// Walks every chain from its anchor to its head and reports every row that does not
    /// verify: edited, removed from the middle or the end, or chain ends that were moved.
    public func verifyAudit(batchSize: Int = 1000) async throws -> AuditVerification {
        let chain = auditChain
        var report = AuditVerification()
        let ends = try await store.auditChainEnds()
        for end in ends where chain.seal(end).map({ $0 != end.seal }) ?? false {
            report.failures.append(
                "audit \(Self.chainName(end.chain)) \(end.name.rawValue) (row \(end.rowID)) was altered")
        }
        // Where each chain stands: its last row seen (or its anchor), and whether it had begun
        // (rows before version 3 carry no MAC and are not covered).
        var walked: [String: (position: Int64, mac: [UInt8]?, chained: Bool)] = [:]
        for anchor in ends where anchor.name == .anchor {
            walked[anchor.chain] = (anchor.position, anchor.mac, true)
        }
        var after: Int64?
        while true {
            let rows = try await store.auditEvents(after: after, credentialID: nil, limit: batchSize)
            guard !rows.isEmpty else { break }
            for row in rows {
                report.rows += 1
                after = row.id
                let seen = walked[row.chain] ?? (0, nil, false)
                walked[row.chain] = (row.position, row.mac, seen.chained || row.mac != nil)
                guard let mac = row.mac else {
                    if seen.chained {
                        report.failures.append("audit row \(row.id) has lost its MAC")
                    } else {
                        report.unchainedRows += 1
                    }
                    continue
                }
                if row.position != seen.position + 1 {
                    report.failures.append(
                        Self.removed(seen.position + 1, row.position - 1, of: row.chain, before: row.id))
                } else if chain.link(previous: seen.mac, row: row).map({ $0 != mac }) ?? false {
                    report.failures.append("audit row \(row.id) was edited (or the row before it was replaced)")
                }
            }
        }
        for head in ends where head.name == .head {
            let seen = walked[head.chain] ?? (0, nil, false)
            if seen.position < head.position {
                report.failures.append(Self.removed(seen.position + 1, head.position, of: head.chain, before: nil))
            } else if seen.position == head.position, seen.mac != head.mac {
                report.failures.append(
                    "audit row \(head.rowID) does not match the \(Self.chainName(head.chain))'s head")
            }
        }
        return report
    }

    private static func chainName(_ chain: String) -> String { chain.isEmpty ? "chain" : "chain \(chain)" }

    /// Rows `first`-`last` of a chain, missing before row `id` (nil: at the end). In the first
    /// chain a row's position is its id, so the rows are named; in a node's, they are counted.
    private static func removed(_ first: Int64, _ last: Int64, of chain: String, before id: Int64?) -> String {
        let end = id == nil ? " from the end" : ""
        guard !chain.isEmpty else {
            return (first == last ? "audit row \(first) was removed" : "audit rows \(first)-\(last) were removed") + end
        }
        let count = last - first + 1
        let rows = count == 1 ? "1 audit row of chain \(chain) was" : "\(count) audit rows of chain \(chain) were"
        return rows + " removed" + (id.map { " before row \($0)" } ?? end)
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
