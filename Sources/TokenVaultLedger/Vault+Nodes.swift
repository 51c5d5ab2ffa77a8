import TokenVaultCore

/// The node's heartbeat (`NodeHeartbeat`), outside the group
/// commit (a beat must not wait behind a queue of writes). Listing and forgetting nodes is the
/// operator's (`tokenvault nodes`), on the store directly: it needs no key.
extension Vault {
    /// One beat of this node: renews every lease it holds and reads every node's counter.
    public func heartbeat(_ beat: NodeBeat) async throws -> HeartbeatReading {
        try await store.heartbeat(beat)
    }
}
