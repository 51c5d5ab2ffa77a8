import TokenVaultCore

/// Re-applying, after a failover, the commits this node keeps (`AnswerRetention`) that the
/// database lost. A kept row is written back only over the same credential (same `createdAt`)
/// at a lower generation: that row holds a refresh token the provider has already spent. A
/// credential the database no longer has at all is reported, not created again: a row that a
/// lost commit created cannot be told from one deleted since.
extension FailoverGuard {
    /// Why no refresh may be journalled in the transaction `writer` runs, which reads the
    /// server's timeline once (only where the guard is armed: a daemon on PostgreSQL).
    func refusal(in writer: any CredentialWriter) async throws -> VaultError? {
        guard isArmed else { return nil }
        return refusal(seeing: try await writer.timeline())
    }
}

extension Vault {
    /// What one reconciliation did.
    public struct Reapplication: Sendable, Equatable {
        /// Credentials written back, each audited (`credential.reapply`).
        public var reapplied: [CredentialID] = []
        /// Kept rows the database has no credential for.
        public var missing: [CredentialID] = []
        /// Kept rows the database already had, or had newer.
        public var current = 0

        public init() {}
    }

    /// Journals again the attempts this process has out (`inFlight`: the credentials whose
    /// refresh runs here now), answered and holds, or left open for a resumption, whose rows the
    /// database lost: without them another node would present the same refresh tokens. Returns
    /// how many were journalled again.
    public func rejournal(inFlight: Set<CredentialID>) async throws -> Int {
        forgetSettledAttempts(inFlight: inFlight)
        var count = 0
        for attempt in journalled.all {
            let again = try await writes.write(.full, claiming: [attempt.credentialID]) { writer -> Bool? in
                // A credential deleted since, or refreshed past the attempt's generation: moot.
                guard let current = try await writer.record(attempt.credentialID)?.metadata,
                    current.generation <= attempt.generation
                else { return nil }
                guard try await !writer.isAttemptRecorded(attempt.attemptID),
                    try await writer.settleLostAttempt(of: attempt.credentialID, below: attempt.generation) == nil
                else { return false }
                do {
                    try await writer.beginAttempt(attempt)
                    return true
                } catch let error as VaultError where error.code == .conflict {
                    return false
                }
            }
            switch again {
            case true?: count += 1
            case false?: break
            case nil: journalled.remove(attempt.attemptID)
            }
        }
        return count
    }

    /// Forgets the attempts that are neither out (`inFlight`) nor answered and held, but for one
    /// left open for a resumption (`awaitResumption(of:)`), kept as long as commits are: a
    /// resumption hands it the answer the courier spooled, which a fresh attempt would not get.
    public func forgetSettledAttempts(inFlight: Set<CredentialID>) {
        journalled.forget(now: clock.now, keepingAwaitedFor: retention?.retention ?? 0) {
            !inFlight.contains($0.credentialID) && pendingCommit(for: $0.credentialID) == nil
        }
    }

    /// The courier ended during the call of `attempt`: it stays open, and a resumption takes it up.
    /// Remembered, so that it is journalled again if a failover loses its row.
    public func awaitResumption(of attempt: RefreshAttempt) {
        journalled.awaitResumption(attempt.attemptID, since: clock.now)
    }

    /// Writes back every kept row the database is behind, one FULL transaction each, closing the
    /// attempt the lost commit would have closed. `timeline` is the one being reconciled; the
    /// audit row names it.
    public func reapply(_ records: [SealedCredentialRecord], timeline: Int64) async throws -> Reapplication {
        var report = Reapplication()
        let appendAudit = auditAppender
        let announcer = announcer
        for record in records {
            let id = record.metadata.id
            let outcome = try await writes.write(.full, claiming: [id]) { [clock] writer -> Bool? in
                guard let current = try await writer.record(id)?.metadata else { return nil }
                guard current.createdAt == record.metadata.createdAt, current.generation < record.metadata.generation
                else { return false }
                _ = try await writer.settleLostAttempt(of: id, below: record.metadata.generation)
                try await writer.save(record)
                let audit = AuditEvent(
                    at: clock.now, operation: .credentialReapply, credentialID: id, outcome: .succeeded,
                    detail: "generation \(record.metadata.generation) over \(current.generation) after the database "
                        + "lost commits (timeline \(timeline))")
                try await appendAudit([audit], writer)
                try await announcer.newTokens(previous: current, after: record.metadata, writer)
                return true
            }
            switch outcome {
            case nil: report.missing.append(id)
            case false?: report.current += 1
            case true?:
                report.reapplied.append(id)
                publish(.refreshed, id, record.metadata)
            }
        }
        return report
    }
}

extension CredentialWriter {
    /// Closes the attempt open on `id` as succeeded when it started below `generation`: it
    /// finished on the lost primary, whose commit made the later generation. Returns the attempt
    /// still open at `generation` or above, if any.
    fileprivate func settleLostAttempt(of id: CredentialID, below generation: Int64) async throws -> RefreshAttempt? {
        guard let open = try await openAttempt(for: id) else { return nil }
        guard open.generation < generation else { return open }
        _ = try await closeSucceededAttempt(attemptID: open.attemptID, owner: open.leaseOwner)
        return nil
    }
}
