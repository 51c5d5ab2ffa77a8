import TokenVaultCore

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
    public func rotate(progress: (Int) -> Void = { _ in }) async throws -> Report {
        let newTerm = try keyring.addTerm()
        return try await finish(onto: newTerm, progress: progress)
    }

    /// Re-seals rows not yet on `target` and drops unused terms (also resumes a rotation that
    /// was interrupted). Each batch is one short transaction of the ledger's.
    public func finish(onto target: UInt32, progress: (Int) -> Void = { _ in }) async throws -> Report {
        var resealed = 0
        while true {
            let batch = try await vault.reseal(onto: target, limit: batchSize)
            if batch.picked == 0 { break }
            resealed += batch.resealed
            progress(resealed)
        }
        var removed: [UInt32] = []
        var remaining: [UInt32] = []
        for stored in try terms.terms() where stored.term != target {
            if try terms.removeTerm(stored.term) { removed.append(stored.term) } else { remaining.append(stored.term) }
        }
        // Only once no row is left on an older term: until then the rotation is not done.
        if remaining.isEmpty { try await vault.announceKeyRotation(term: target) }
        return Report(newTerm: target, resealed: resealed, removedTerms: removed, remainingTerms: remaining)
    }
}
