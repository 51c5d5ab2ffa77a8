/// The result of a write of tokens a provider issued: committed, or held in memory while the
/// database refuses it (retried in the background until it is committed).
public enum HeldOrCommitted<Value: Sendable>: Sendable {
    case committed(Value)
    case held(PendingCommit)
}

extension HeldOrCommitted {
    /// Whether the write is held (not committed yet).
    public var isHeld: Bool {
        if case .held = self { return true }
        return false
    }
}
