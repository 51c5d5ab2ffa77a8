import TokenVaultCore

extension RecordCache {
    /// What one transaction changes, for the cache: the rows it touched, kept out of the cache
    /// until it ends, and the rows it wrote whole, kept as written once it has committed
    /// (`endWrites`): the next read of a credential this process just refreshed or stored then
    /// needs no database. Each writer holds one for its transaction.
    struct Writes {
        /// The rows touched (`touch`), each with the cache's ticket from its first change.
        fileprivate var tickets: [CredentialID: Ticket] = [:]
        /// Rows written whole (`save`) and not changed afterwards.
        private var saved: [CredentialID: SealedCredentialRecord] = [:]
        /// Rows read under their lock and not changed (`lockedRead`).
        fileprivate var readUnderLock: Set<CredentialID> = []
        /// A write of the transaction threw: whatever of it was undone (a savepoint rolled back,
        /// a group's write taken back in memory, the whole transaction to be rolled back), its
        /// saves are not known to be in the database, and none is kept.
        var aWriteThrew = false

        /// Every statement that changes a credential row says so here first.
        mutating func touch(_ id: CredentialID, in cache: RecordCache) {
            if tickets[id] == nil { tickets[id] = cache.beginWrite(id) }
            saved[id] = nil
        }

        /// A row read under its lock (PostgreSQL): what the cache holds of it may be behind a
        /// change of another node not heard yet, and a refresh planned from it is refused
        /// (`Vault.isSameState`), so it is dropped when the transaction ends, as a row changed
        /// is, unless the transaction keeps what it writes of it. Read only: it is served from
        /// the cache meanwhile, and a row it writes takes its ticket when it changes it.
        mutating func lockedRead(_ id: CredentialID) {
            if tickets[id] == nil { readUnderLock.insert(id) }
        }

        /// `record` is the row as the transaction has written it (after `touch`).
        mutating func saved(_ record: SealedCredentialRecord) {
            saved[record.metadata.id] = record
        }

        var committedRows: [WrittenRow] {
            guard !aWriteThrew else { return [] }
            return saved.compactMap { id, record in tickets[id].map { WrittenRow(record: record, ticket: $0) } }
        }
    }

    /// Ends a transaction's writes: `committed` says it committed (false also when its outcome is
    /// unknown: its rows are then dropped again if a change of them made here is heard later).
    func end(_ writes: Writes, committed: Bool) {
        let touched = writes.tickets.keys
        endWrites(
            touched, readUnderLock: writes.readUnderLock.filter { !touched.contains($0) },
            committed: committed ? writes.committedRows : [], uncertain: !committed)
    }
}
