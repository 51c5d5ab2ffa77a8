/// Tokens a provider answered with (a refresh, a code exchange) that could not be committed
/// yet. They stay in locked memory and the commit is retried with backoff for as long as the
/// process lives; the stored generation keeps being served while it is valid.
public struct PendingCommit: Sendable, Equatable {
    /// When the first commit failed.
    public var since: Timestamp
    /// Failed commits so far.
    public var failures: Int
    /// Why the last one failed (never a token).
    public var lastError: String
    /// When the next try is due.
    public var nextAttemptAt: Timestamp

    public init(since: Timestamp, failures: Int, lastError: String, nextAttemptAt: Timestamp) {
        self.since = since
        self.failures = failures
        self.lastError = lastError
        self.nextAttemptAt = nextAttemptAt
    }
}
