import Foundation

/// Something the people behind a backend must hear about even when nothing watches the local
/// stream: a credential that needs its user to sign in again, refreshes failing for a while,
/// the recovery, a revocation, a deletion, a key rotation. Written to the outbox in the
/// transaction of the change (`Vault+Webhooks.swift`) and delivered signed
/// (`WebhookDispatcher`). Ids, provider, status, reason codes and times only: never a token,
/// never a label value (labels may hold what the caller considers private).
public struct WebhookEvent: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable, Codable {
        /// The provider refused the grant: a person must sign in again (`reason` says why).
        case needsReauth = "credential.needs_reauth"
        /// Refreshes have been failing for longer than `webhooks.failing_after_seconds`.
        case refreshFailing = "credential.refresh_failing"
        /// New tokens after `refresh_failing`, `needs_reauth` or `expired` was announced.
        case recovered = "credential.recovered"
        /// Past expiry with no way to refresh.
        case expired = "credential.expired"
        /// The provider confirmed the revocation (a `deleted` follows in the same transaction).
        case revoked = "credential.revoked"
        /// The provider could not be reached or refused the revocation; it is retried.
        case revocationFailing = "credential.revocation_failing"
        case deleted = "credential.deleted"
        /// A device sign-in the daemon polled for ended with tokens stored.
        case authorized = "credential.authorized"
        /// A device sign-in ended without tokens (`reason`: `access_denied`, `expired_token`…).
        case authorizationFailed = "credential.authorization_failed"
        /// A new data key took over and every credential was re-sealed with it.
        case keyRotated = "vault.key_rotated"

        /// Whether the credential's last failure is what the event is about (it is left out of
        /// the others, where it would be stale).
        var carriesReason: Bool {
            [.needsReauth, .refreshFailing, .expired, .revocationFailing, .authorizationFailed].contains(self)
        }
    }

    public var kind: Kind
    public var at: Timestamp
    public var credentialID: CredentialID?
    public var provider: String?
    public var status: CredentialStatus?
    public var generation: Int64?
    /// The failure's code (`invalid_grant`, `provider_unavailable`…), never its message, which
    /// may quote a provider's answer; sent with the events about a failure only.
    public var reason: String?
    /// When the refreshes began failing (`refresh_failing`).
    public var failingSince: Timestamp?
    /// The data key term now in use (`key_rotated`).
    public var keyTerm: UInt32?

    public init(
        kind: Kind, at: Timestamp, credentialID: CredentialID? = nil, provider: String? = nil,
        status: CredentialStatus? = nil, generation: Int64? = nil, reason: String? = nil,
        failingSince: Timestamp? = nil, keyTerm: UInt32? = nil
    ) {
        self.kind = kind
        self.at = at
        self.credentialID = credentialID
        self.provider = provider
        self.status = status
        self.generation = generation
        self.reason = reason
        self.failingSince = failingSince
        self.keyTerm = keyTerm
    }

    /// An event about `metadata`'s credential as it stands after the change.
    public init(_ kind: Kind, _ metadata: CredentialMetadata, at: Timestamp, failingSince: Timestamp? = nil) {
        self.init(
            kind: kind, at: at, credentialID: metadata.id, provider: metadata.provider, status: metadata.status,
            generation: metadata.generation, reason: metadata.lastError?.code, failingSince: failingSince)
    }

    /// The body sent, as Standard Webhooks lays it out: `type`, `timestamp`, `data`.
    public func payload() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Only strings, numbers and timestamps (which encode as text): it cannot fail.
        return Array((try? encoder.encode(Body(self))) ?? Data())
    }

    private struct Body: Encodable {
        struct Data: Encodable {
            var id: String?
            var namespace: String?
            var provider: String?
            var status: CredentialStatus?
            var generation: Int64?
            var reason: String?
            var failingSince: String?
            var keyTerm: UInt32?

            enum CodingKeys: String, CodingKey {
                case id, namespace, provider, status, generation, reason
                case failingSince = "failing_since", keyTerm = "key_term"
            }
        }
        var type: Kind
        /// RFC 3339, as the specification's example has it.
        var timestamp: String
        var data: Data

        init(_ event: WebhookEvent) {
            type = event.kind
            timestamp = event.at.description
            data = Data(
                id: event.credentialID?.description, namespace: event.credentialID?.namespace,
                provider: event.provider, status: event.status, generation: event.generation,
                reason: event.kind.carriesReason ? event.reason : nil, failingSince: event.failingSince?.description,
                keyTerm: event.keyTerm)
        }
    }
}
