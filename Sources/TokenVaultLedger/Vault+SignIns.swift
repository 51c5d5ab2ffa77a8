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
        let key = Self.key(of: state, domain: "state", sealer)
        let details = AuthorizationDetails(
            redirectURI: pending.redirectURI, scopes: pending.scopes, nonce: pending.nonce, labels: pending.labels,
            gid: pending.gid)
        var row = SealedAuthorization(
            key: key, credentialID: pending.credentialID, provider: pending.provider, uid: pending.uid,
            createdAt: pending.createdAt, expiresAt: pending.expiresAt, sealTerm: sealer.activeTerm, secret: [],
            details: [])
        try seal(&row, secret: pending.codeVerifier, details: details)
        return try await store.addAuthorization(row, limit: limit, now: clock.now)
    }

    /// The sign-in `state` names, removed from the store: it is finished at most once. Nil when
    /// none waits under it (never started, finished, or pruned after expiring).
    public func takeAuthorization(state: SecretBytes) async throws -> PendingAuthorization? {
        guard let row = try await store.takeAuthorization(key: Self.key(of: state, domain: "state", sealer)) else {
            return nil
        }
        let (verifier, details) = try await open(row)
        return PendingAuthorization(
            credentialID: row.credentialID, provider: row.provider, redirectURI: details.redirectURI,
            scopes: details.scopes, codeVerifier: verifier, nonce: details.nonce, labels: details.labels, uid: row.uid,
            gid: details.gid, createdAt: row.createdAt, expiresAt: row.expiresAt)
    }

    /// Keeps a started device grant until its poller ends it, under its device code's
    /// fingerprint; false when its caller has `limit` sign-ins waiting already.
    public func keepDeviceAuthorization(
        credentialID: CredentialID, provider: String, deviceCode: SecretBytes, scopes: [String],
        labels: [String: String]?, uid: UInt32, gid: UInt32?, keepsSubject: Bool, issuer: String?, interval: Int,
        expiresAt: Timestamp, limit: Int
    ) async throws -> Bool {
        let now = clock.now
        let details = AuthorizationDetails(
            redirectURI: "", scopes: scopes, nonce: nil, labels: labels, gid: gid, keepsSubject: keepsSubject,
            issuer: issuer)
        var row = SealedAuthorization(
            key: Self.key(of: deviceCode, domain: "device", sealer), kind: .deviceCode, credentialID: credentialID,
            provider: provider, uid: uid, createdAt: now, expiresAt: expiresAt, sealTerm: sealer.activeTerm,
            secret: [], details: [], pollInterval: interval, nextPollAt: now.adding(seconds: Double(interval)))
        try seal(&row, secret: deviceCode, details: details)
        return try await store.addAuthorization(row, limit: limit, now: now)
    }

    /// Device grants due for a poll, held by `claim` for `seconds`: no other node polls them
    /// meanwhile. A row that does not open is removed, and its error logged by the caller.
    public func claimDevicePolls(claim: String, seconds: Double, limit: Int) async throws
        -> [Result<PendingDeviceSignIn, DeviceRowError>]
    {
        let now = clock.now
        let rows = try await store.claimDevicePolls(
            now: now, claim: claim, until: now.adding(seconds: seconds), limit: limit)
        var opened: [Result<PendingDeviceSignIn, DeviceRowError>] = []
        for row in rows {
            do {
                opened.append(.success(try await openDevice(row)))
            } catch {
                opened.append(.failure(DeviceRowError(key: row.key, credentialID: row.credentialID, error: error)))
            }
        }
        return opened
    }

    /// A device grant's row that did not open (its seal or its details are broken).
    public struct DeviceRowError: Error {
        public var key: String
        public var credentialID: CredentialID
        public var error: any Error
    }

    /// How many sign-ins `uid` has waiting, as the limit counts them: checked before the server
    /// is asked for a device code, so a caller over the limit spends none (the insert checks again).
    public func waitingSignIns(uid: UInt32) async throws -> Int {
        try await store.waitingAuthorizations(uid: uid, now: clock.now)
    }

    /// The device grants waiting for `credentialID`, opened.
    public func devicePolls(for credentialID: CredentialID) async throws -> [PendingDeviceSignIn] {
        var opened: [PendingDeviceSignIn] = []
        for row in try await store.devicePolls(for: credentialID) { opened.append(try await openDevice(row)) }
        return opened
    }

    /// The credential as a reader sees it: `metadata(_:)`, except that while a device sign-in
    /// into it waits, a credential with no tokens to serve (none stored yet, or `needs_reauth` or
    /// `expired` ones) shows `pending_authorization`. One that has none stored yet shows only
    /// what the grant says (its provider, when it started); its labels arrive with its tokens.
    /// Nothing the engine decides reads this.
    public func shownMetadata(_ id: CredentialID) async throws -> CredentialMetadata {
        guard let shown = try await shownMetadata(id, excluding: nil) else { throw VaultError.notFound(id) }
        return shown
    }

    /// The credential as a reader will see it once the device grant `key` is gone: what the
    /// watch and events streams are told when that grant ends. Nil when no credential exists and
    /// no other grant waits for one. Read before the grant's row goes, so a failed read leaves
    /// the end to be written again.
    public func shownMetadata(_ id: CredentialID, endingGrant key: String) async throws -> CredentialMetadata? {
        try await shownMetadata(id, excluding: key)
    }

    /// Tells this process's watch and events streams that a device grant ended, with what
    /// `shownMetadata(_:endingGrant:)` read.
    public func publishSignInEnded(_ id: CredentialID, _ ended: SignInEnd, shown: CredentialMetadata?) {
        publish(ended.eventKind, id, shown, reason: ended.reason)
    }

    /// A device sign-in another node polled ended (its change reached this one): this process's
    /// watch and events streams hear it as that node's did, with the credential as shown now.
    public func publishSignInEndedElsewhere(_ id: CredentialID, ended: SignInEnd) async {
        guard events.hasSubscriber(for: ended.eventKind, id) else { return }
        do {
            publishSignInEnded(id, ended, shown: try await shownMetadata(id, excluding: nil))
        } catch {
            // Unreadable now: a watch learns the end at its next heartbeat's look.
        }
    }

    private func shownMetadata(_ id: CredentialID, excluding key: String?) async throws -> CredentialMetadata? {
        var stored: CredentialMetadata?
        do {
            stored = try await metadata(id)
        } catch let error as VaultError where error.code == .credentialNotFound {
            stored = nil
        }
        if let stored, !stored.status.awaitsSignIn { return stored }
        let now = clock.now
        guard
            let grant = try await store.devicePolls(for: id).first(where: { $0.expiresAt > now && $0.key != key })
        else { return stored }
        guard var shown = stored else {
            return CredentialMetadata(
                id: id, provider: grant.provider, kind: .oauth2, status: .pendingAuthorization, generation: 0,
                issuedAt: grant.createdAt, createdAt: grant.createdAt, updatedAt: grant.createdAt,
                hasRefreshToken: false, hasIDToken: false)
        }
        shown.status = .pendingAuthorization
        return shown
    }

    public func scheduleDevicePoll(key: String, claim: String, interval: Int, at: Timestamp) async throws -> Bool {
        try await store.scheduleDevicePoll(key: key, claim: claim, interval: interval, at: at)
    }

    public func removeDevicePoll(key: String, ended: SignInEnd?) async throws -> Bool {
        try await store.removeDevicePoll(key: key, ended: ended)
    }

    private func openDevice(_ row: SealedAuthorization) async throws -> PendingDeviceSignIn {
        let (deviceCode, details) = try await open(row)
        return PendingDeviceSignIn(
            key: row.key, credentialID: row.credentialID, provider: row.provider, deviceCode: deviceCode,
            scopes: details.scopes, labels: details.labels, uid: row.uid, gid: details.gid,
            keepsSubject: details.keepsSubject ?? true, issuer: details.issuer, interval: row.pollInterval ?? 5,
            nextPollAt: row.nextPollAt ?? row.createdAt, createdAt: row.createdAt, expiresAt: row.expiresAt)
    }

    /// Seals `secret` (a PKCE verifier, a device code) and `details` into `row`, under its
    /// `sealTerm`, bound to its columns. The term must exist when the row is inserted (its foreign
    /// key); rotation keeps it while the row lives.
    private func seal(_ row: inout SealedAuthorization, secret: SecretBytes, details: AuthorizationDetails) throws {
        row.secret = try sealer.seal(secret, associatedData: Self.associatedData(row, "secret"), term: row.sealTerm)
        row.details = try sealer.seal(
            SecretBytes(try JSONEncoder().encode(details)), associatedData: Self.associatedData(row, "details"),
            term: row.sealTerm)
    }

    /// A row's sealed secret and details, opened (its term loaded first if this process lacks it).
    private func open(_ row: SealedAuthorization) async throws -> (SecretBytes, AuthorizationDetails) {
        if !sealer.hasKey(for: row.sealTerm) { try await loadKeyTerms() }
        let secret = try sealer.open(row.secret, associatedData: Self.associatedData(row, "secret"))
        let details = try sealer.open(row.details, associatedData: Self.associatedData(row, "details"))
            .withUnsafeBytes { try JSONDecoder().decode(AuthorizationDetails.self, from: Data($0)) }
        return (secret, details)
    }

    /// The row's key: a fingerprint of the state (or the device code) in a domain of its own (it
    /// never collides with a refresh token's fingerprint, or one kind's with the other's).
    private static func key(of secret: SecretBytes, domain: String, _ sealer: any Sealer) -> String {
        let prefix = Array("tokenvault.authorization.\(domain)\u{0}".utf8)
        let domained = SecretBytes(count: prefix.count + secret.count) { buffer in
            buffer.copyBytes(from: prefix)
            secret.withUnsafeBytes {
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
