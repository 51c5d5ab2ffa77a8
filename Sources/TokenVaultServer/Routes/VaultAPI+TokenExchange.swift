import Hummingbird
import NIOCore
import TokenVaultCore

/// `POST /v1/credentials/{ns}/{name}/token-exchange`: a token derived from the credential's by RFC
/// 8693 token exchange at its provider, for another `audience` or `resource`, a narrower `scope`
/// or another token type. The caller needs `token:exchange` (or `token:read`) and gets the derived
/// token only: the credential's own tokens never leave the vault, and the credential is left as it
/// is. The same request while the derived token lives is answered from memory.
extension VaultAPI {
    func exchangeToken(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let peer = try await authorise(context, .tokenExchange, id: id, operation: .tokenExchange)
        try requireJSON(request)
        let exchangeRequest = try decodeTokenExchange(try await collectBody(request))
        let engine = try requireEngine()
        let credential: Credential
        switch exchangeRequest.subjectTokenType {
        case .accessToken:
            // The subject must outlive the exchange: refreshed first if it is about to expire.
            switch try await usableCredential(id, minimumTTL: 30) {
            case .success(let usable): credential = usable
            case .failure(let refusal):
                audit.record(auditEvent(peer, .tokenExchange, id, .failed, detail: refusal.code.rawValue))
                throw refusal
            }
        case .refreshToken:
            credential = try await vault.credential(id, opening: [.refreshToken])
        }
        let subject =
            exchangeRequest.subjectTokenType == .accessToken
            ? credential.secrets.accessToken : credential.secrets.refreshToken
        guard let subject else {
            throw VaultError.invalidField("subject_token_type", "the credential has no refresh token")
        }
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

    /// `audience` and `resource` (a string or an array), `scopes`, `requested_token_type` and
    /// `subject_token_type` (`access_token`, the default, or `refresh_token`).
    func decodeTokenExchange(_ body: ByteBuffer) throws -> TokenExchangeRequest {
        let fields = try bodyMembers(
            body, known: ["audience", "resource", "scopes", "requested_token_type", "subject_token_type"])
        let reader = FieldReader(fields: fields)
        func list(_ name: String) throws -> [String] {
            if case .string(let single)? = fields[name] { return [single] }
            return try reader.strings(name, maximum: 2048)
        }
        let subject = try reader.string("subject_token_type", required: false, maximum: 64) ?? "access_token"
        guard
            let subjectType = TokenExchangeRequest.SubjectTokenType.allCases.first(where: {
                $0.rawValue == subject || $0.rawValue.hasSuffix(":" + subject)
            })
        else { throw VaultError.invalidField("subject_token_type", "must be access_token or refresh_token") }
        let request = TokenExchangeRequest(
            audiences: try list("audience"), resources: try list("resource"),
            scopes: try reader.strings("scopes", maximum: 256),
            requestedTokenType: try reader.string("requested_token_type", required: false, maximum: 256),
            subjectTokenType: subjectType)
        guard !(request.audiences + request.resources + request.scopes).contains(where: \.isEmpty) else {
            throw VaultError.invalidField("audience", "audiences, resources and scopes must not be empty strings")
        }
        return request
    }
}
