import TokenVaultCore

extension PostgresDatabase.Change {
    /// What the `watch` and `events` streams call this change, or nil for one they do not report
    /// (a schedule moved, a lease taken). A new generation made by an update is reported as a
    /// refresh: the change table does not tell a refresh from a PUT that replaced the tokens.
    public var eventKind: CredentialEvent.Kind? {
        switch operation {
        case .signInEnded: return signInEnd?.eventKind
        case .delete: return .deleted
        case .insert: return .stored
        case .update:
            if newStatus != oldStatus || failed {
                switch newStatus {
                case .failing?: return .failing
                case .needsReauth?: return .needsReauth
                case .revokePending?: return .revokePending
                case .expired?: return .expired
                case .active?: return newGeneration != oldGeneration ? .refreshed : nil
                case .pendingAuthorization?, nil: return nil
                }
            }
            return newGeneration != oldGeneration ? .refreshed : nil
        }
    }
}
