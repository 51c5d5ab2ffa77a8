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
        let key = Self.key(of: state, sealer)
        let details = AuthorizationDetails(
            redirectURI: pending.redirectURI, scopes: pending.scopes, nonce: pending.nonce, labels: pending.labels,
            gid: pending.gid)
        // The term must exist when the row is inserted (its foreign key); rotation keeps it while
        // the row lives.
        let term = sealer.activeTerm
        var row = SealedAuthorization(
            key: key, credentialID: pending.credentialID, provider: pending.provider, uid: pending.uid,
            createdAt: pending.createdAt, expiresAt: pending.expiresAt, sealTerm: term, secret: [], details: [])
        row.secret = try sealer.seal(
            pending.codeVerifier, associatedData: Self.associatedData(row, "secret"), term: term)
        row.details = try sealer.seal(
            SecretBytes(try JSONEncoder().encode(details)), associatedData: Self.associatedData(row, "details"),
            term: term)
        return try await store.addAuthorization(row, limit: limit, now: clock.now)
    }

    /// The sign-in `state` names, removed from the store: it is finished at most once. Nil when
    /// none waits under it (never started, finished, or pruned after expiring).
    public func takeAuthorization(state: SecretBytes) async throws -> PendingAuthorization? {
        guard let row = try await store.takeAuthorization(key: Self.key(of: state, sealer)) else { return nil }
        if !sealer.hasKey(for: row.sealTerm) { try await loadKeyTerms() }
        let verifier = try sealer.open(row.secret, associatedData: Self.associatedData(row, "secret"))
        let details = try sealer.open(row.details, associatedData: Self.associatedData(row, "details"))
            .withUnsafeBytes { try JSONDecoder().decode(AuthorizationDetails.self, from: Data($0)) }
        return PendingAuthorization(
            credentialID: row.credentialID, provider: row.provider, redirectURI: details.redirectURI,
            scopes: details.scopes, codeVerifier: verifier, nonce: details.nonce, labels: details.labels, uid: row.uid,
            gid: details.gid, createdAt: row.createdAt, expiresAt: row.expiresAt)
    }

    /// The row's key: a fingerprint of the state in a domain of its own (a state never collides
    /// with a refresh token's fingerprint).
    private static func key(of state: SecretBytes, _ sealer: any Sealer) -> String {
        let prefix = Array("tokenvault.authorization.state\u{0}".utf8)
        let domained = SecretBytes(count: prefix.count + state.count) { buffer in
            buffer.copyBytes(from: prefix)
            state.withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: buffer[prefix.count...]).copyMemory(from: $0)
            }
        }
        return sealer.fingerprint(domained)
    }

    /// Binds a sealed field to its row's columns (key, credential, provider, uid, expiry) and its
    /// name: a row whose columns someone with write access to the database changed, pointing it
    /// at another instance or caller or giving it longer, no longer opens.
    private static func associatedData(_ row: SealedAuthorization, _ field: String) -> [UInt8] {
        let parts = [
            "tokenvault.authorization.v1", row.key, row.credentialID.description, row.provider, String(row.uid),
            String(row.expiresAt.milliseconds), field,
        ]
        return Array(parts.joined(separator: "\u{0}").utf8)
    }
}
