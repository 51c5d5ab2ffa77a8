import TokenVaultCore

/// Key rotation's re-seal and `verify`: the two walks over every row, done by the ledger like
/// every other read and write of a row.
extension Vault {
    /// The data key term new seals use (raised by each rotation), for metrics.
    public var activeKeyTerm: UInt32 { sealer.activeTerm }

    /// Re-seals up to `limit` rows not yet sealed under `term`, in one transaction. Returns how
    /// many rows it picked (0: none is left) and how many it moved. A row changed since it was
    /// picked is re-read inside the transaction, so a concurrent write is never overwritten with
    /// older tokens.
    public func reseal(onto term: UInt32, limit: Int) async throws -> (picked: Int, resealed: Int) {
        let batch = try await store.records(notSealedWith: term, limit: limit)
        guard !batch.isEmpty else { return (0, 0) }
        let resealed = try await writes.write(.normal) { [self] writer in
            var count = 0
            // In id order: two nodes resealing (or importing) the same credentials lock their
            // rows in the same order, so neither waits on the other in a cycle (PostgreSQL would
            // fail one as a deadlock, after its deadlock_timeout).
            for candidate in batch.sorted(by: { $0.metadata.id.description < $1.metadata.id.description }) {
                guard let current = try await writer.record(candidate.metadata.id), current.sealTerm != term else {
                    continue
                }
                try await writer.save(try seal(try open(current), metadata: current.metadata, term: term))
                count += 1
            }
            return count
        }
        return (batch.count, resealed)
    }

    /// Opens every sealed field of every credential and reports what failed, by id and field,
    /// without printing any secret. Backs `tokenvault verify`.
    public func verify(batchSize: Int = 500) async throws -> VerificationReport {
        var report = VerificationReport()
        var after: CredentialID?
        while true {
            let batch = try await store.records(after: after, limit: batchSize)
            guard let last = batch.last else { break }
            for record in batch {
                report.credentials += 1
                report.sealedFields += SealedField.allCases.filter { record[$0] != nil }.count
                do {
                    _ = try open(record)
                } catch let error as VaultError {
                    report.failures.append(error.message)
                }
            }
            after = last.metadata.id
        }
        return report
    }
}
