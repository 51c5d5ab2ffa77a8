/// What a node keeps of the tokens it committed, on its own disk, for a while after each commit:
/// the row exactly as it was written (the tokens still sealed). PostgreSQL replicates to an
/// asynchronous standby some time after a commit returns, so a failover can lose the last
/// commits, whose refresh tokens the provider has already rotated. The node writes back what it
/// kept when it finds the database on a timeline it has not reconciled (`FailoverGuard`).
public protocol AnswerRetention: Sendable {
    /// How long each commit is kept, in seconds.
    var retention: Double { get }
    /// Keeps `record`, just committed.
    func retain(_ record: SealedCredentialRecord)
    /// The newest record kept for each credential.
    func retained() throws -> [SealedCredentialRecord]
    /// The database timeline this node last wrote back what it kept for; it outlives the daemon,
    /// so a restart on the same timeline has nothing to write back.
    var reconciledTimeline: Int64? { get }
    func markReconciled(_ timeline: Int64) throws
    /// Forgets what was kept longer than the retention period.
    func prune()
}
