/// Names a provider call whose answer must outlive the daemon: the courier keeps the answer until
/// the daemon settles it (`AnswerSettlement`), and seals it to the spool if the daemon dies
/// first. A daemon that starts again and makes the call with the same key gets the spooled answer
/// instead of sending the request twice. Passed explicitly, in the request
/// (`RefreshRequest.call`, `CodeExchangeRequest.call`) or as `revoke`'s argument, down to the
/// transport; a recovered answer says when its request was sent (`TokenPayload.sentAt`).
///
/// Keys are stable across restarts: `refresh:<attempt id>` (the journal resumes the attempt),
/// `revoke:<credential>:<generation>:<hint>`, `exchange:<id>` (recovered from its context).
public struct ProviderCall: Sendable {
    public var key: String
    /// What recovery needs besides the answer (an exchange's credential, labels and checks),
    /// sealed with it; never logged.
    public var context: SecretBytes?

    public init(key: String, context: SecretBytes? = nil) {
        self.key = key
        self.context = context
    }
}

/// The courier, as the engine sees it: told when a call's answer is safe without the courier's
/// copy (committed, recorded as a failure, or no longer wanted), and asked which answers the
/// spool holds from while no daemon was running.
public protocol AnswerSettlement: Sendable {
    func settle(_ key: String)
    /// Spooled answers whose key starts with `prefix`, with their calls' contexts.
    func spooled(prefix: String) -> [(key: String, context: SecretBytes?)]
    /// Returns once the spool is read (a courier of an earlier daemon may still be finishing
    /// its calls, and spooling them): before then `spooled` knows nothing of them. False when it
    /// never will be (no courier started, or the daemon is stopping).
    func waitUntilReady() async -> Bool
}

extension AnswerSettlement {
    public func waitUntilReady() async -> Bool { true }
}

/// No courier (tests, in-process engines): nothing to settle, nothing spooled.
public struct NoSettlement: AnswerSettlement {
    public init() {}
    public func settle(_ key: String) {}
    public func spooled(prefix: String) -> [(key: String, context: SecretBytes?)] { [] }
}
