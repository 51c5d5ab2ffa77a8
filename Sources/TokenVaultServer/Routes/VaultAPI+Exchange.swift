import Foundation
import Hummingbird
import NIOCore
import TokenVaultCore

/// `POST /v1/credentials/{ns}/{name}/exchange`: the vault redeems the one-time code the mobile
/// SDK handed the app (with its PKCE verifier) at the provider, checks the id token's nonce,
/// audience and expiry, and stores the result as `PUT` would. The caller gets the metadata and
/// the access token, never the refresh token. Nothing is stored unless every check passed.
extension VaultAPI {
    struct ExchangeBody {
        var provider: String
        var code: SecretBytes
        var codeVerifier: SecretBytes
        var redirectURI: String
        var nonce: String?
        var state: String?
        var labels: [String: String]
    }

    func exchange(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let peer = try await authorise(context, .credentialWrite, id: id, operation: .credentialExchange)
        try requireJSON(request)
        let body = try decodeExchange(try await collectBody(request))
        let engine = try requireEngine()
        let redeemed: RedeemedCode
        do {
            redeemed = try await engine.redeem(
                CodeRedemption(
                    provider: body.provider,
                    request: CodeExchangeRequest(
                        code: body.code, codeVerifier: body.codeVerifier, redirectURI: body.redirectURI,
                        state: body.state, credentialID: id),
                    nonce: body.nonce, labels: body.labels,
                    audit: auditEvent(peer, .credentialExchange, id, .allowed)))
        } catch {
            // A provider's refusal, or an id token that failed its checks: nothing was stored.
            throw auditedFailure(error, peer, .credentialExchange, id, provider: body.provider)
        }
        let payload = redeemed.payload
        let metadata = try await committed(redeemed, id: id)
        context.logger.info(
            "credential stored from a code exchange",
            metadata: [
                "tokenvault.credential.id": "\(id)", "tokenvault.credential.generation": "\(metadata.generation)",
            ])
        var response = Response(
            status: metadata.generation == 1 ? .created : .ok,
            headers: [.contentType: "application/json", .cacheControl: TokenJSON.cacheControl],
            body: .init(byteBuffer: exchangeBody(metadata, payload: payload)))
        response.headers[.location] = "/v1/credentials/\(id.namespace)/\(id.name)"
        return response
    }

    /// A provider's failure to redeem a code (an exchange's, a sign-in's) as the caller sees it:
    /// the instance cannot (`provider_not_configured`), refused (`provider_rejected`, with the OAuth
    /// error code), or could not be reached (`provider_unavailable`, to try again).
    /// A call on a caller's behalf failed: the failure is audited under `operation` with its
    /// code, and a provider's failure becomes the problem it is answered as (`problem`).
    func auditedFailure(
        _ error: any Error, _ peer: PeerCredentials, _ operation: AuditOperation, _ id: CredentialID,
        provider: String
    ) -> any Error {
        switch error {
        case let failure as ProviderFailure:
            audit.record(auditEvent(peer, operation, id, .failed, detail: failure.code.rawValue))
            return Self.problem(failure, at: provider)
        case let error as VaultError:
            audit.record(auditEvent(peer, operation, id, .failed, detail: error.code.rawValue))
            return error
        default: return error
        }
    }

    static func problem(_ failure: ProviderFailure, at provider: String) -> ProblemDetails {
        if [.providerNotConfigured, .tokenExchangeNotSupported, .grantNotSupported].contains(failure.code) {
            return ProblemDetails(.providerNotConfigured, detail: failure.message)
        }
        if failure.code == .subjectUnavailable { return ProblemDetails(.conflict, detail: failure.message) }
        switch failure.kind {
        case .invalidGrant, .misconfigured:
            return ProblemDetails(
                .providerRejected,
                detail: "the token endpoint of \(provider) answered \(failure.code): \(failure.message)")
        case .transient, .unknownOutcome:
            return ProblemDetails(
                .providerUnavailable,
                detail: "the call to \(provider) failed: \(failure.code): \(failure.message)",
                retryAfter: failure.retryAfterWholeSeconds)
        }
    }

    /// How long an exchange waits for a held commit before answering `commit_pending`.
    static let exchangeCommitWait = 5.0

    /// The stored metadata of a redeemed code once its write is committed (at once, or after the
    /// ledger's retries succeed within `exchangeCommitWait`); `commit_pending` if it is still held.
    func committed(_ redeemed: RedeemedCode, id: CredentialID) async throws -> CredentialMetadata {
        guard let metadata = try await committedWithin(redeemed.stored, id: id, seconds: Self.exchangeCommitWait) else {
            throw ProblemDetails(
                .commitPending,
                detail: "the code was redeemed, but the database has not taken the tokens of \(id) yet; they are "
                    + "held and stored as soon as it does. Do not repeat the exchange (the code is spent): read "
                    + "the credential later", retryAfter: 5)
        }
        return metadata
    }

    /// The stored metadata once the write is committed: at once, or after the ledger's retries
    /// succeed within `seconds`; nil if it is still held.
    private func committedWithin(_ stored: HeldOrCommitted<CredentialMetadata>, id: CredentialID, seconds: Double)
        async throws -> CredentialMetadata?
    {
        if case .committed(let metadata) = stored { return metadata }
        let deadline = ContinuousClock.now + .seconds(seconds)
        while vault.pendingCommit(for: id) != nil {
            guard ContinuousClock.now < deadline else { return nil }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await vault.metadata(id)
    }

    /// `{"credential": {…}, "token": {…}}`: the metadata as every route writes it, the token part
    /// by `TokenJSON`, straight from locked memory (no `String` copy of a token).
    private func exchangeBody(_ metadata: CredentialMetadata, payload: TokenPayload) -> ByteBuffer {
        let credential = MetadataJSON.document(metadata, allocator: ByteBufferAllocator())
        let token = TokenJSON.body(
            accessToken: payload.secrets.accessToken, tokenType: metadata.tokenType ?? "Bearer",
            expiresAt: metadata.expiresAt, idToken: payload.secrets.idToken, allocator: ByteBufferAllocator())
        var body = ByteBuffer()
        body.reserveCapacity(credential.readableBytes + token.readableBytes + 24)
        body.writeStaticString("{\"credential\":")
        body.writeImmutableBuffer(credential)
        body.writeStaticString(",\"token\":")
        body.writeImmutableBuffer(token)
        body.writeStaticString("}")
        return body
    }

    /// Field by field, naming the field that is wrong; unknown fields are refused.
    func decodeExchange(_ body: ByteBuffer) throws -> ExchangeBody {
        let fields = try bodyMembers(
            body, known: ["provider", "code", "code_verifier", "redirect_uri", "nonce", "state", "labels"])
        let reader = FieldReader(fields: fields)

        let provider = try provider(fields["provider"], in: vault.providers)
        let code = try reader.string("code", required: true, maximum: 4096)!
        let verifier = try reader.string("code_verifier", required: true, maximum: 128)!
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        guard (43...128).contains(verifier.count), verifier.allSatisfy(unreserved.contains) else {
            throw VaultError.invalidField("code_verifier", "must be 43-128 unreserved characters (RFC 7636)")
        }
        let redirectURI = try reader.string("redirect_uri", required: true, maximum: 2048)!
        guard let url = URL(string: redirectURI), url.scheme != nil else {
            throw VaultError.invalidField("redirect_uri", "must be an absolute URI")
        }
        let labels = try decodeLabels(fields["labels"])
        return ExchangeBody(
            provider: provider, code: SecretBytes(utf8: code), codeVerifier: SecretBytes(utf8: verifier),
            redirectURI: redirectURI, nonce: try reader.string("nonce", required: false, maximum: 256),
            state: try reader.string("state", required: false, maximum: 512), labels: labels)
    }
}
