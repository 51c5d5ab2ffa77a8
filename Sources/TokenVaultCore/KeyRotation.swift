/// Online key rotation: a new term takes new writes at once; existing rows are re-sealed in
/// small transactions while reads and writes go on; old terms are dropped once no row uses
/// them (the schema's foreign key refuses to drop a term still in use).
public struct KeyRotation: Sendable {
    public struct Report: Sendable, Equatable {
        public var newTerm: UInt32
        public var resealed: Int
        public var removedTerms: [UInt32]
        /// Terms still referenced (rows written concurrently by a process with an old keyring).
        public var remainingTerms: [UInt32]
    }

    public let vault: Vault
    public let keyring: any RotatingSealer
    public let terms: any KeyTermStore
    public var batchSize: Int

    public init(vault: Vault, keyring: any RotatingSealer, terms: any KeyTermStore, batchSize: Int = 200) {
        self.vault = vault
        self.keyring = keyring
        self.terms = terms
        self.batchSize = batchSize
    }

    /// Adds a term and moves every row onto it.
    public func rotate(progress: (Int) -> Void = { _ in }) throws -> Report {
        let newTerm = try keyring.addTerm()
        return try finish(onto: newTerm, progress: progress)
    }

    /// Re-seals rows not yet on the active term and drops unused terms (also resumes a
    /// rotation that was interrupted).
    public func finish(onto target: UInt32, progress: (Int) -> Void = { _ in }) throws -> Report {
        var resealed = 0
        while true {
            let batch = try vault.store.records(notSealedWith: target, limit: batchSize)
            if batch.isEmpty { break }
            resealed += try reseal(batch, onto: target)
            progress(resealed)
        }
        var removed: [UInt32] = []
        var remaining: [UInt32] = []
        for stored in try terms.terms() where stored.term != target {
            if try terms.removeTerm(stored.term) { removed.append(stored.term) } else { remaining.append(stored.term) }
        }
        return Report(newTerm: target, resealed: resealed, removedTerms: removed, remainingTerms: remaining)
    }

    /// Re-seals one batch in one transaction. A row changed since it was read is re-read inside
    /// the transaction, so a concurrent write is never overwritten with older tokens.
    private func reseal(_ batch: [SealedCredentialRecord], onto target: UInt32) throws -> Int {
        try vault.store.write(durability: .normal) { writer in
            var count = 0
            for candidate in batch {
                guard let current = try writer.record(candidate.metadata.id), current.sealTerm != target else {
                    continue
                }
                let secrets = try vault.open(current)
                try writer.save(try vault.seal(secrets, metadata: current.metadata, term: target))
                count += 1
            }
            return count
        }
    }
}
