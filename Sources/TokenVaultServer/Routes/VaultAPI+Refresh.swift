import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TokenVaultCore

/// The routes that involve the refresh engine: token reads that may refresh on demand, forced
/// refresh and delete with revocation.
extension VaultAPI {
    /// `GET .../token?min_ttl=S`: the access token (never the refresh token). When less than S
    /// seconds remain, the credential is refreshed first (joining a refresh already in flight).
    /// A still-valid token is served with its true `expires_at` while refreshes fail; a token
    /// that cannot satisfy `min_ttl` is never served.
    func token(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let minimumTTL =
            try request.uri.queryParameters.get("min_ttl").map { text -> Double in
                guard let seconds = MinimumTTL.parse(text.utf8) else { throw MinimumTTL.problem }
                return seconds
            } ?? 0
        let peer = try await authorise(context, .tokenRead, id: id, operation: .tokenRead)
        let credential: Credential
        switch try await usableCredential(id, minimumTTL: minimumTTL) {
        case .success(let usable): credential = usable
        case .failure(let refusal):
            audit.record(auditEvent(peer, .tokenRead, id, .failed, detail: refusal.code.rawValue))
            throw refusal
        }
        return Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: TokenJSON.cacheControl],
            body: .init(byteBuffer: servedToken(credential, to: peer, allocator: ByteBufferAllocator())))
    }

    /// A token read that is served: its audit row and its body. The one place a served read is
    /// written, for the router's `token` and the event loop's `TokenFastPath` alike (both send it
    /// with `TokenJSON.cacheControl`).
    func servedToken(_ credential: Credential, to peer: PeerCredentials, allocator: ByteBufferAllocator)
        -> ByteBuffer
    {
        let metadata = credential.metadata
        audit.record(auditEvent(peer, .tokenRead, metadata.id, .allowed))
        return TokenJSON.body(
            accessToken: credential.secrets.accessToken, tokenType: metadata.tokenType ?? "Bearer",
            expiresAt: metadata.expiresAt, idToken: credential.secrets.idToken, allocator: allocator)
    }

    /// The credential with its access and ID tokens open: from the store's cache of rows
    /// without a thread hop when it holds the row, else from the database's threads.
    func readCredential(_ id: CredentialID) async throws -> Credential {
        try await vault.credential(id, opening: SealedField.served)
    }

    /// The credential with its access token open, refreshed first when less than `minimumTTL`
    /// seconds remain (joining a refresh in flight): the one rule of a token read and a proxied
    /// call. A token that cannot satisfy `minimumTTL` is never given: the refusal says why.
    /// `read`: the credential as the caller has just read it (saves reading it again).
    func usableCredential(_ id: CredentialID, minimumTTL: Double, read: Credential? = nil) async throws
        -> Result<Credential, ProblemDetails>
    {
        var credential: Credential
        if let read {
            credential = read
        } else {
            credential = try await readCredential(id)
        }
        var verdict = TokenReadVerdict(
            credential.metadata, minimumTTL: minimumTTL, clock: vault.clock, canRefresh: engine != nil)
        if let engine, verdict == .refreshFirst {
            var refreshFailure: String?
            switch try await engine.refreshOnDemand(id, minimumTTL: minimumTTL) {
            case .refreshed: break
            case .failed(let failure, _): refreshFailure = "the refresh failed: \(failure.code): \(failure.message)"
            case .skipped(let reason, _): refreshFailure = reason
            case .commitPending(let held):
                refreshFailure = "new tokens are waiting to be committed (\(held.lastError))"
            case .tooSoon(_, let reason): refreshFailure = reason
            }
            credential = try await readCredential(id)
            verdict = TokenReadVerdict(
                credential.metadata, minimumTTL: minimumTTL, clock: vault.clock, canRefresh: false,
                refreshTried: true, refreshFailure: refreshFailure)
        }
        if case .refuse(let code, let detail) = verdict {
            // A refused clock passes: the caller is told when to try again.
            return .failure(ProblemDetails(code, detail: detail, retryAfter: vault.clock.refusal?.retryAfter))
        }
        return .success(credential)
    }

    /// `POST .../refresh`: refresh now. How often is the engine's rule (`refreshForced`); this
    /// maps its answer to a status.
    func forceRefresh(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let peer = try await authorise(context, .tokenRead, id: id, operation: .credentialRefresh)
        let engine = try requireEngine()
        // A node whose clock is refused starts no refresh: `503 clock_skew`, not "not refreshable".
        if let refusal = vault.clock.refusal { throw ProblemDetails(refusal) }
        let outcome = try await engine.refreshForced(id)
        switch outcome {
        case .refreshed(let refreshed):
            audit.record(auditEvent(peer, .credentialRefresh, id, .succeeded))
            return json(refreshed)
        case .failed(let failure, _):
            audit.record(auditEvent(peer, .credentialRefresh, id, .failed, detail: failure.code.rawValue))
            if failure.code == .providerNotConfigured {
                throw ProblemDetails(.notRefreshable, detail: failure.message)
            }
            if failure.kind == .invalidGrant {
                throw ProblemDetails(
                    .needsReauth,
                    detail: "the provider rejected the refresh token of \(id); sign in again (\(failure.message))")
            }
            throw ProblemDetails(
                .providerUnavailable,
                detail: "refreshing \(id) failed: \(failure.code): \(failure.message)",
                retryAfter: failure.retryAfterWholeSeconds)
        case .skipped(let reason, _):
            audit.record(auditEvent(peer, .credentialRefresh, id, .failed, detail: "not_refreshable"))
            throw ProblemDetails(.notRefreshable, detail: reason)
        case .tooSoon(let wait, let reason):
            audit.record(auditEvent(peer, .credentialRefresh, id, .denied, detail: "rate_limited"))
            throw ProblemDetails(.rateLimited, detail: reason, retryAfter: wait)
        case .commitPending(let held):
            audit.record(auditEvent(peer, .credentialRefresh, id, .failed, detail: "commit_pending"))
            throw ProblemDetails(
                .commitPending,
                detail: "the provider answered, but the database has not taken the new tokens of \(id) yet "
                    + "(\(held.lastError)); they are held and committed as soon as it does", retryAfter: 5)
        }
    }

    /// `DELETE ...[?force=true]`: revoke at the provider, then delete. 204 when gone; 202 with
    /// the credential when revocation failed and it stays `revoke_pending` (retried in the
    /// background); `force=true` deletes even then.
    func delete(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let force: Bool
        switch request.uri.queryParameters.get("force") {
        case nil, "false", "0": force = false
        case "true", "1": force = true
        default:
            throw VaultError.invalidField("force", "must be true or false")
        }
        let peer = try await authorise(context, .credentialWrite, id: id, operation: .credentialDelete)
        let event = auditEvent(peer, .credentialDelete, id, .allowed)
        guard let engine else {
            try await vault.delete(id, audit: event)
            context.logger.info("credential deleted", metadata: ["tokenvault.credential.id": "\(id)"])
            var response = Response(status: .noContent)
            response.headers[.tokenVaultRevoked] = "false"
            return response
        }
        switch try await engine.remove(id, force: force, audit: event) {
        case .deleted(let revoked):
            var response = Response(status: .noContent)
            response.headers[.tokenVaultRevoked] = revoked ? "true" : "false"
            return response
        case .revokePending(let metadata, let failure):
            audit.record(auditEvent(peer, .credentialDelete, id, .failed, detail: "revoke_pending: \(failure.code)"))
            // The metadata's last_error says why; the credential is retried in the background.
            return json(metadata, status: .accepted)
        }
    }
}

extension HTTPField.Name {
    /// On `DELETE`: whether the provider confirmed revocation.
    static let tokenVaultRevoked = HTTPField.Name("TokenVault-Revoked")!
}
