import Foundation
import TokenVaultCore

/// Pending sign-ins, kept like credentials: Storage sees the PKCE verifier and the nonce only
/// sealed, and never the state, whose fingerprint finds the row.
extension Vault {
    /// A new sign-in's secrets, from the vault's generator: 32 random bytes each (256 bits, twice
    /// the least RFC 9700 asks of a state), as base64url text.
    public struct SignInSecrets: Sendable {
        public var state: SecretBytes
        /// 43 characters (RFC 7636 section 4.1).
        public var codeVerifier: SecretBytes
        public var codeChallenge: String
        public var nonce: String
    }

    public func makeSignInSecrets() -> SignInSecrets {
        let verifier = Base64URL.encode(sealer.randomSecret(count: 32))
        return SignInSecrets(
            state: Base64URL.encode(sealer.randomSecret(count: 32)), codeVerifier: verifier,
            codeChallenge: Base64URL.encode(sealer.sha256(verifier)),
            nonce: Base64URL.encode(sealer.randomSecret(count: 32)).revealString())
    }

    /// Keeps `pending` until it expires, under `state`'s fingerprint; false when its caller has
    /// `limit` sign-ins waiting already (expired ones are pruned first).
    public func keepAuthorization(_ pending: PendingAuthorization, state: SecretBytes, limit: Int) async throws -> Bool
    {
        let key = sealer.fingerprint(state)
        let details = AuthorizationDetails(
            redirectURI: pending.redirectURI, scopes: pending.scopes, nonce: pending.nonce, labels: pending.labels,
            gid: pending.gid)
        let term = sealer.activeTerm
        let row = SealedAuthorization(
            key: key, credentialID: pending.credentialID, provider: pending.provider, uid: pending.uid,
            createdAt: pending.createdAt, expiresAt: pending.expiresAt,
            verifier: try sealer.seal(
                pending.codeVerifier, associatedData: Self.associatedData(key, pending.credentialID, "verifier"),
                term: term),
            details: try sealer.seal(
                SecretBytes(try JSONEncoder().encode(details)),
                associatedData: Self.associatedData(key, pending.credentialID, "details"), term: term))
        return try await store.addAuthorization(row, limit: limit, now: clock.now)
    }

    /// The sign-in `state` names, removed from the store: it is finished at most once. Nil when
    /// none waits under it (never started, finished, or pruned after expiring).
    public func takeAuthorization(state: SecretBytes) async throws -> PendingAuthorization? {
        let key = sealer.fingerprint(state)
        guard let row = try await store.takeAuthorization(key: key) else { return nil }
        for envelope in [row.verifier, row.details] where !sealer.hasKey(for: try sealer.term(of: envelope)) {
            try await loadKeyTerms()
        }
        let verifier = try sealer.open(
            row.verifier, associatedData: Self.associatedData(key, row.credentialID, "verifier"))
        let details = try sealer.open(
            row.details, associatedData: Self.associatedData(key, row.credentialID, "details")
        )
        .withUnsafeBytes { try JSONDecoder().decode(AuthorizationDetails.self, from: Data($0)) }
        return PendingAuthorization(
            credentialID: row.credentialID, provider: row.provider, redirectURI: details.redirectURI,
            scopes: details.scopes, codeVerifier: verifier, nonce: details.nonce, labels: details.labels, uid: row.uid,
            gid: details.gid, createdAt: row.createdAt, expiresAt: row.expiresAt)
    }

    /// Binds a sealed field to its row (the state's fingerprint), its credential and its name, so
    /// no field opens in another row's place.
    private static func associatedData(_ key: String, _ id: CredentialID, _ field: String) -> [UInt8] {
        Array("tokenvault.authorization.v1\u{0}\(key)\u{0}\(id)\u{0}\(field)".utf8)
    }
}
