import Foundation
import TokenVaultCore

/// What a failed refresh does to the credential, per docs/providers/. Pure: the random
/// number and the time come in, so every row is unit-tested.
///
/// - `invalid_grant`: `needs_reauth`, never retried. If the attempt was resuming one whose
///   answer was lost (a crash, a dropped connection), the reason says the provider probably
///   rotated the token then.
/// - misconfigured client, a grant refused (`grant_not_supported`, an audience, a scope) or a
///   derived credential's subject without a token (`subject_unavailable`): `failing`, retried at
///   the slow probe interval.
/// - transient or unknown outcome: `failing`, exponential backoff with full jitter, honouring
///   `Retry-After`. The current token keeps being served until it expires.
struct FailurePolicy: Sendable {
    let limits: ProviderLimits

    struct Decision: Sendable, Equatable {
        var update: ScheduleUpdate
        /// Nil when nothing a watcher cares about changed (the same failure again).
        var event: CredentialEvent.Kind?
    }

    func decide(
        _ failure: ProviderFailure, for metadata: CredentialMetadata, resumingLostAnswer: Bool, now: Timestamp,
        random: Double
    ) -> Decision {
        var update = ScheduleUpdate(
            id: metadata.id, generation: metadata.generation, expectedStatus: metadata.status, status: .failing,
            refreshAt: nil,
            lastError: CredentialFailure(code: failure.code.rawValue, message: failure.message, at: now),
            refreshFailures: metadata.refreshFailures + 1, updatedAt: now)
        switch failure.kind {
        case .invalidGrant:
            update.status = .needsReauth
            update.refreshAt = nil
            if resumingLostAnswer {
                update.lastError?.message =
                    "the provider rejected the refresh token after an earlier refresh's answer was lost "
                    + "(the provider had probably rotated it then); sign in again. Provider said: \(failure.message)"
            } else {
                update.lastError?.message =
                    "the provider rejected the refresh token; sign in again. "
                    + "Provider said: \(failure.message)"
            }
        case .misconfigured:
            // Probed slowly, and ever more slowly while nobody fixes the configuration (up to a
            // day), so a million credentials of an unconfigured provider cost next to nothing.
            let doublings = Double(min(max(update.refreshFailures - 1, 0), 16))
            let wait = min(limits.misconfiguredProbeInterval * pow(2, doublings), 86_400)
            update.refreshAt = now.adding(seconds: wait * (1 + 0.1 * random))
        case .transient, .unknownOutcome:
            let wait = limits.retry.delay(
                attempt: update.refreshFailures, retryAfter: failure.retryAfter, random: random)
            update.refreshAt = now.adding(seconds: max(wait, 0.05))
        }
        let changed = update.status != metadata.status || metadata.lastError?.code != failure.code.rawValue
        return Decision(
            update: update, event: changed ? (update.status == .needsReauth ? .needsReauth : .failing) : nil)
    }

    /// How the failure bears on the provider's circuit breaker. `byGrant`: the failure answered a
    /// credential's own grant (client credentials, token exchange), whose refusals (a scope, an
    /// audience, a subject, the grant type) are that credential's, like a dead refresh token, but
    /// for a refused client (`invalid_client`), which every call of the instance would meet.
    static func providerClass(_ failure: ProviderFailure, byGrant: Bool = false) -> ProviderFailureClass {
        if failure.code == .courierLost || failure.code == .courierUnavailable || failure.code == .courierNotReady {
            return .local
        }
        // A grant refused before it was sent (the instance's option, no subject token) says
        // nothing of the server, and answers no probe.
        if byGrant, failure.kind == .misconfigured, failure.httpStatus == nil { return .local }
        switch failure.kind {
        case .invalidGrant: return .credential
        case .misconfigured where byGrant && !failure.refusesTheClient: return .credential
        case .misconfigured: return .misconfigured("\(failure.code): \(failure.message)")
        case .transient, .unknownOutcome: return .transient
        }
    }
}
