import TokenVaultCore

/// Told about commits of received tokens that fail and recover, so the daemon can log them
/// (Core has no logger of its own).
public protocol LedgerObserver: Sendable {
    /// A commit of tokens a provider issued failed; they are held and retried at `retryAt`.
    func commitFailed(_ id: CredentialID, pending: PendingCommit, error: any Error)
    /// Held tokens were committed (or found superseded by a newer generation) after failures.
    func commitRecovered(_ id: CredentialID, after pending: PendingCommit)
    /// A provider's answer to a refresh could not be stored because another node took the attempt
    /// over (`Vault.RefreshCommit.leaseLost`): the operator must hear of it.
    func answerLost(_ id: CredentialID, attempt: RefreshAttempt, why: String)
}
