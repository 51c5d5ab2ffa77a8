import TokenVaultCore

/// What `GET .../token?min_ttl=S` answers for a credential in a given state. Pure, so that the
/// routed handler and the event-loop fast path (`TokenFastPath`) cannot disagree: the fast path
/// answers only `.serve` and hands everything else to the route.
enum TokenReadVerdict: Equatable {
    /// 200 with the access token.
    case serve
    /// Refresh on demand first (the token can be refreshed and has less than S seconds left).
    case refreshFirst
    /// The code's status (409, or 503 for `clock_skew`) with this detail; nothing is served.
    case refuse(code: VaultError.Code, detail: String)

    /// - Parameters:
    ///   - canRefresh: a refresh engine runs and no refresh was tried for this request yet.
    ///   - refreshTried: this is the verdict after an on-demand refresh was asked for.
    ///   - refreshFailure: why the refresh tried for this request did not help, for the detail.
    ///   - clock: whose `now` judges expiry; a clock too far off the database's serves nothing.
    init(
        _ metadata: CredentialMetadata, minimumTTL: Double, clock: any VaultClock, canRefresh: Bool,
        refreshTried: Bool = false, refreshFailure: String? = nil
    ) {
        if let refusal = clock.refusal {
            self = .refuse(code: refusal.code, detail: refusal.message)
            return
        }
        self.init(
            metadata, minimumTTL: minimumTTL, now: clock.now, canRefresh: canRefresh, refreshTried: refreshTried,
            refreshFailure: refreshFailure)
    }

    /// The rule itself, at `now`.
    init(
        _ metadata: CredentialMetadata, minimumTTL: Double, now: Timestamp, canRefresh: Bool,
        refreshTried: Bool = false, refreshFailure: String? = nil
    ) {
        let id = metadata.id
        if canRefresh, Self.needsRefresh(metadata, minimumTTL: minimumTTL, now: now) {
            self = .refreshFirst
            return
        }
        switch metadata.status {
        case .revokePending:
            self = .refuse(
                code: .revokePending, detail: "credential \(id) is being deleted; its tokens are not served")
            return
        case .needsReauth:
            // The provider rejected the grant; with reuse detection it has revoked the access
            // token too, so it is not served however long it seemed to last.
            self = .refuse(
                code: .needsReauth,
                detail: "credential \(id) needs re-authorisation: \(metadata.lastError?.message ?? "sign in again")")
            return
        default:
            break
        }
        guard let expiresAt = metadata.expiresAt, expiresAt < now.adding(seconds: minimumTTL) else {
            self = .serve
            return
        }
        var detail =
            expiresAt <= now
            ? "the access token of \(id) expired at \(expiresAt)"
            : "the access token of \(id) expires at \(expiresAt), sooner than min_ttl=\(Int(minimumTTL)) s"
        if let refreshFailure {
            detail += "; \(refreshFailure)"
        } else if let error = metadata.lastError {
            detail += "; last refresh error: \(error.code): \(error.message)"
        }
        // Tokens that live shorter than min_ttl as issued cannot meet it after any refresh: say so,
        // so the caller fixes its min_ttl instead of retrying (once a refresh has been tried).
        if refreshTried, expiresAt > now, let lifetime = metadata.lifetime, lifetime < minimumTTL {
            self = .refuse(
                code: .minTTLUnreachable,
                detail: "tokens of \(id) live \(Int(lifetime)) s as issued, less than min_ttl=\(Int(minimumTTL)) s; "
                    + "no refresh can meet it: ask for a shorter min_ttl")
            return
        }
        self = .refuse(code: .tokenExpired, detail: detail)
    }

    /// Worth an on-demand refresh: it can be refreshed and has less than `minimumTTL` left.
    static func needsRefresh(_ metadata: CredentialMetadata, minimumTTL: Double, now: Timestamp) -> Bool {
        guard metadata.isRenewable, metadata.status == .active || metadata.status == .failing,
            let expiresAt = metadata.expiresAt
        else { return false }
        return expiresAt < now.adding(seconds: minimumTTL)
    }
}
