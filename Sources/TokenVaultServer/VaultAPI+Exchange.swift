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
        let peer = try await authorise(context, .credentialWrite, id: id, operation: "credential.exchange")
        try requireJSON(request)
        let body = try decodeExchange(try await collectBody(request))
        guard let engine else {
            throw ProblemDetails(
                .serviceUnavailable, code: "engine_unavailable", detail: "this daemon runs without a refresh engine")
        }
        let payload: TokenPayload
        let clientID: String?
        do {
            (payload, clientID) = try await engine.exchange(
                provider: body.provider,
                CodeExchangeRequest(
                    code: body.code, codeVerifier: body.codeVerifier, redirectURI: body.redirectURI, state: body.state,
                    credentialID: id))
        } catch let failure as ProviderFailure {
            audit.record(auditEvent(peer, "credential.exchange", id, .failed, detail: failure.code))
            switch failure.kind {
            case .invalidGrant, .misconfigured:
                throw ProblemDetails(
                    .unprocessableContent, code: "provider_rejected",
                    detail: "the token endpoint of \(body.provider) answered \(failure.code): \(failure.message)")
            case .transient, .unknownOutcome:
                throw ProblemDetails(
                    .badGateway, code: "provider_unavailable",
                    detail: "the code exchange at \(body.provider) failed: \(failure.code): \(failure.message)",
                    retryAfter: failure.retryAfter.map { Int($0.rounded(.up)) })
            }
        }
        do {
            try IDTokenCheck.check(
                idToken: payload.secrets.idToken, expectedNonce: body.nonce, clientID: clientID, now: vault.clock.now)
        } catch {
            audit.record(auditEvent(peer, "credential.exchange", id, .failed, detail: error.code))
            throw error
        }
        let event = auditEvent(peer, "credential.exchange", id, .allowed)
        let metadata = try await blocking {
            try vault.put(id, payload: payload, provider: body.provider, labels: body.labels, audit: event)
        }
        context.logger.info(
            "credential stored from a code exchange",
            metadata: [
                "tokenvault.credential.id": "\(id)", "tokenvault.credential.generation": "\(metadata.generation)",
            ])
        var response = try json(
            ExchangeDocument(
                credential: CredentialMetadataDocument(metadata),
                token: TokenDocument(
                    accessToken: payload.secrets.accessToken.revealString(), tokenType: metadata.tokenType ?? "Bearer",
                    expiresAt: metadata.expiresAt?.description, idToken: payload.secrets.idToken?.revealString())),
            status: metadata.generation == 1 ? .created : .ok)
        response.headers[.cacheControl] = "no-store"
        response.headers[.location] = "/v1/credentials/\(id.namespace)/\(id.name)"
        return response
    }

    /// Field by field, naming the field that is wrong; unknown fields are refused.
    func decodeExchange(_ body: ByteBuffer) throws -> ExchangeBody {
        guard case .object(let fields)? = try? JSONDecoder().decode(JSONValue.self, from: Data(buffer: body)) else {
            throw VaultError.invalidPayload(
                "the body must be a JSON object {\"provider\", \"code\", \"code_verifier\", \"redirect_uri\", ...}")
        }
        let known = ["provider", "code", "code_verifier", "redirect_uri", "nonce", "state", "labels"]
        if let unknown = fields.keys.filter({ !known.contains($0) }).sorted().first {
            throw VaultError.invalidField(unknown, "is not a known field (\(known.joined(separator: ", ")))")
        }
        func string(_ name: String, required: Bool, maximum: Int) throws -> String? {
            switch fields[name] {
            case nil, .null?:
                if required { throw VaultError.invalidField(name, "is required") }
                return nil
            case .string(let text)?:
                guard !text.isEmpty, text.utf8.count <= maximum else {
                    throw VaultError.invalidField(name, "must be 1-\(maximum) bytes")
                }
                return text
            case let other?:
                throw VaultError.invalidField(name, "expected a string, got \(other.typeName)")
            }
        }
        let provider = try string("provider", required: true, maximum: 64)!
        guard options.providers.contains(provider) else {
            throw VaultError(code: "unknown_provider", message: "no provider named '\(provider)' is configured")
        }
        let code = try string("code", required: true, maximum: 4096)!
        let verifier = try string("code_verifier", required: true, maximum: 128)!
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        guard (43...128).contains(verifier.count), verifier.allSatisfy(unreserved.contains) else {
            throw VaultError.invalidField("code_verifier", "must be 43-128 unreserved characters (RFC 7636)")
        }
        let redirectURI = try string("redirect_uri", required: true, maximum: 2048)!
        guard let url = URL(string: redirectURI), url.scheme != nil else {
            throw VaultError.invalidField("redirect_uri", "must be an absolute URI")
        }
        let labels = try decodeLabels(fields["labels"])
        return ExchangeBody(
            provider: provider, code: SecretBytes(utf8: code), codeVerifier: SecretBytes(utf8: verifier),
            redirectURI: redirectURI, nonce: try string("nonce", required: false, maximum: 256),
            state: try string("state", required: false, maximum: 512), labels: labels)
    }
}

/// The answer to a code exchange: the stored credential and its access token.
struct ExchangeDocument: Encodable {
    let credential: CredentialMetadataDocument
    let token: TokenDocument
}
