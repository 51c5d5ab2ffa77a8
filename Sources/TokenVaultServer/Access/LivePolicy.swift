import Synchronization

/// The access policy in force: read by every request, replaced whole by a reload (SIGHUP), so a
/// connection opened before the reload is judged by the new rules from its next request on.
public final class LivePolicy: Sendable {
    private let current: Mutex<AccessPolicy>

    public init(_ policy: AccessPolicy) { current = Mutex(policy) }

    public var policy: AccessPolicy { current.withLock { $0 } }

    /// Puts `rules` in force (the daemon's uid and root stay admins as before).
    public func replace(rules: [AccessPolicy.Rule]) { current.withLock { $0.rules = rules } }
}
