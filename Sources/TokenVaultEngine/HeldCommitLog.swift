import Logging
import TokenVaultCore
import TokenVaultLedger

/// Logs the ledger's held commits: a provider's answer the database refused is an error the
/// operator must see (the tokens are in memory only until it goes through), and its recovery a
/// notice. Retries are logged with the count, so a long outage is visible without a line per try
/// flooding the log: the first failure, then every tenth.
struct HeldCommitLog: LedgerObserver {
    let logger: Logger
    let wake: WakeSignal
    let statistics: RefreshStatistics

    /// At error level, always: the family is probably revoked at the provider, and this line
    /// says why (a partition or pause longer than the lease period, or a node forgotten alive).
    func answerLost(_ id: CredentialID, attempt: RefreshAttempt, why: String) {
        statistics.record { $0.answersLostToTakeover += 1 }
        logger.error(
            "provider answer not stored: another node took the refresh over",
            metadata: [
                "tokenvault.credential.id": "\(id)", "tokenvault.attempt.id": "\(attempt.attemptID)",
                "tokenvault.detail": "\(why)",
            ])
    }

    func commitFailed(_ id: CredentialID, pending: PendingCommit, error: any Error) {
        guard pending.failures == 1 || pending.failures % 10 == 0 else { return }
        logger.error(
            "new tokens could not be committed; holding them in memory and retrying",
            metadata: [
                "tokenvault.credential.id": "\(id)", "tokenvault.commit.failures": "\(pending.failures)",
                "tokenvault.commit.next": "\(pending.nextAttemptAt)", "tokenvault.error": "\(error)",
            ])
    }

    func commitRecovered(_ id: CredentialID, after pending: PendingCommit) {
        logger.notice(
            "held tokens committed",
            metadata: [
                "tokenvault.credential.id": "\(id)", "tokenvault.commit.failures": "\(pending.failures)",
                "tokenvault.commit.held_since": "\(pending.since)",
            ])
        // The credential's schedule changed; the scheduler may have work.
        wake.signal()
    }
}
