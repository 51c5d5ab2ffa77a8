import Hummingbird
import NIOCore
import TokenVaultCore

/// `POST /v1/credentials/{ns}/{name}/token-exchange`: a token derived from the credential's access
/// token by RFC 8693 token exchange at its provider, for another `audience` or `resource`, a
/// narrower `scope`, or as a JWT. The caller needs `token:exchange` (or `token:read`) and gets the
/// derived token only: the credential's own tokens never leave the vault, and the credential is
/// left as it is. The same request while the derived token lives is answered from memory. (The
/// refresh token is never the subject: it would go out beside the refreshes' rotation, which a
/// server detecting reuse punishes by revoking the grant.)
extension VaultAPI {
    func exchangeToken(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let peer = try await authorise(context, .tokenExchange, id: id, operation: .tokenExchange)
        try requireJSON(request)
        let exchangeRequest = try decodeTokenExchange(try await collectBody(request))
        let engine = try requireEngine()
        // The subject must outlive the exchange: refreshed first if it is about to expire.
        let credential: Credential
        switch try await usableCredential(id, minimumTTL: 30) {
        case .success(let usable): credential = usable
        case .failure(let refusal):
            audit.record(auditEvent(peer, .tokenExchange, id, .failed, detail: refusal.code.rawValue))
            throw refusal
        }
        let subject = credential.secrets.accessToken
        let metadata = credential.metadata
        let derived: DerivedToken
        do {
            derived = try await engine.exchangeToken(
                TokenExchange(
                    credential: id, provider: metadata.provider, createdAt: metadata.createdAt,
                    generation: metadata.generation, subjectToken: subject, request: exchangeRequest))
        } catch {
            throw auditedFailure(error, peer, .tokenExchange, id, provider: metadata.provider)
        }
        audit.record(auditEvent(peer, .tokenExchange, id, .allowed))
        return Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: TokenJSON.cacheControl],
            body: .init(
                byteBuffer: TokenJSON.body(
                    accessToken: derived.accessToken, tokenType: derived.tokenType, expiresAt: derived.expiresAt,
                    idToken: nil, issuedTokenType: derived.issuedTokenType, scopes: derived.scopes,
                    allocator: ByteBufferAllocator())))
    }

    /// Token types a caller may ask for (RFC 8693 section 3): an access token or a JWT. A refresh
    /// token would be a grant of its own, which even `token:read` never gives.
    static let requestableTokenTypes: Set<String> = [
        "urn:ietf:params:oauth:token-type:access_token", "urn:ietf:params:oauth:token-type:jwt",
    ]

    /// `audience` and `resource` (a string or an array), `scopes` and `requested_token_type`; at
    /// least one of audience, resource and scopes, or the derived token is merely the credential's
    /// own with another name. Lists are sets: repeated values count once.
    func decodeTokenExchange(_ body: ByteBuffer) throws -> TokenExchangeRequest {
        let fields = try bodyMembers(
            body, known: ["audience", "resource", "scopes", "requested_token_type", "subject_token_type"])
        let reader = FieldReader(fields: fields)
        switch try reader.string("subject_token_type", required: false, maximum: 64) {
        case nil, "access_token"?, TokenExchangeRequest.accessTokenType?: break
        default:
            throw VaultError.invalidField(
                "subject_token_type",
                "only access_token: the refresh token is never sent beside the refreshes that rotate it")
        }
        return try decodeExchange(reader)
    }

    /// What a token exchange asks for, as an exchange and a kept derived credential's grant both
    /// take it: `audience` and `resource` (a string or an array), `scopes` and
    /// `requested_token_type`, at least one of the first three, lists as sorted sets.
    func decodeExchange(_ reader: FieldReader) throws -> TokenExchangeRequest {
        let scopes = try reader.scopes("scopes")
        let requested = try reader.string("requested_token_type", required: false, maximum: 256)
        if let requested, !Self.requestableTokenTypes.contains(requested) {
            throw VaultError.invalidField(
                "requested_token_type", "must be one of \(Self.requestableTokenTypes.sorted().joined(separator: ", "))")
        }
        let request = TokenExchangeRequest(
            audiences: try reader.targets("audience"), resources: try reader.targets("resource"), scopes: scopes,
            requestedTokenType: requested
        ).canonical
        guard !(request.audiences.isEmpty && request.resources.isEmpty && request.scopes.isEmpty) else {
            throw VaultError.invalidField("audience", "give an audience, a resource or scopes")
        }
        return request
    }
}
