import Foundation
import Hummingbird
import NIOCore
import TokenVaultCore

/// Sign-ins the vault starts and finishes itself (`credential:authorize`):
/// `POST /v1/credentials/{ns}/{name}/authorization` answers the authorization URL (or, for a
/// mobile SDK, the request's parameters) and keeps the state, PKCE verifier and nonce sealed;
/// `POST …/authorization/callback` takes what the redirect brought and redeems the code into
/// that credential, repairing it in place if it exists. The caller never sees the verifier, and
/// gets the credential's metadata, never a token.
extension VaultAPI {
    func startSignIn(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let peer = try await authorise(context, .credentialAuthorize, id: id, operation: .credentialAuthorize)
        try requireJSON(request)
        let engine = try requireEngine()
        var start = try decodeSignInStart(try await collectBody(request), id: id)
        start.audit = auditEvent(peer, .credentialAuthorize, id, .allowed, detail: start.provider)
        let started: StartedSignIn
        do {
            started = try await engine.startSignIn(start)
        } catch let failure as ProviderFailure {
            audit.record(auditEvent(peer, .credentialAuthorize, id, .failed, detail: failure.code.rawValue))
            throw Self.problem(failure, at: start.provider)
        } catch let error as VaultError {
            audit.record(auditEvent(peer, .credentialAuthorize, id, .failed, detail: error.code.rawValue))
            throw error
        }
        audit.record(start.audit)
        metrics.recordSignIn("started")
        var document: [String: JSONValue] = [
            "expires_at": .string(started.expiresAt.description), "pushed": .bool(started.pushed),
        ]
        if let url = started.authorizationURL { document["authorization_url"] = .string(url) }
        if let parameters = started.parameters { document["parameters"] = Self.parameterObject(parameters) }
        var response = try json(document, status: .created)
        response.headers[.cacheControl] = "no-store"
        return response
    }

    func finishSignIn(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let (peer, groups) = try await authorisedCaller(
            context, .credentialAuthorize, id: id, operation: .credentialAuthorized)
        try requireJSON(request)
        let engine = try requireEngine()
        let callback = try decodeCallback(try await collectBody(request))
        let redeemed: RedeemedCode
        do {
            redeemed = try await engine.finishSignIn(
                SignInFinish(
                    credentialID: id, callback: callback, audit: auditEvent(peer, .credentialAuthorized, id, .allowed),
                    keepsSubject: !policy.allows(uid: peer.uid, groups: groups, .credentialWrite, in: id.namespace)))
        } catch let failure as ProviderFailure {
            audit.record(auditEvent(peer, .credentialAuthorized, id, .failed, detail: failure.code.rawValue))
            metrics.recordSignIn("failed")
            // The state is spent: trying the same callback again cannot help.
            let problem = Self.problem(failure, at: "the provider")
            throw ProblemDetails(problem.code, detail: problem.detail + "; the sign-in is spent: start a new one")
        } catch let error as VaultError {
            audit.record(auditEvent(peer, .credentialAuthorized, id, .failed, detail: error.code.rawValue))
            metrics.recordSignIn("failed")
            throw error
        }
        let metadata = try await committed(redeemed, id: id)
        metrics.recordSignIn("finished")
        return stored(metadata, context, logged: "credential stored from a sign-in")
    }

    /// The request's parameters as an object; a name given more than once (`resource`) as an array.
    static func parameterObject(_ parameters: [(name: String, value: String)]) -> JSONValue {
        var object: [String: JSONValue] = [:]
        for (name, value) in parameters {
            switch object[name] {
            case nil: object[name] = .string(value)
            case .string(let first)?: object[name] = .array([.string(first), .string(value)])
            case .array(let values)?: object[name] = .array(values + [.string(value)])
            default: break
            }
        }
        return .object(object)
    }

    /// Field by field, naming the field that is wrong; unknown fields are refused.
    func decodeSignInStart(_ body: ByteBuffer, id: CredentialID) throws -> SignInStart {
        let fields = try bodyMembers(
            body,
            known: [
                "provider", "redirect_uri", "scopes", "login_hint", "prompt", "resources", "parameters", "labels",
                "mode",
            ])
        let provider = try provider(fields["provider"], in: vault.providers)
        let reader = FieldReader(fields: fields)
        let redirectURI = try reader.string("redirect_uri", required: true, maximum: 2048)!
        let scopes = try reader.strings("scopes", maximum: 256)
        for scope in scopes where scope.isEmpty || scope.contains(" ") {
            throw VaultError.invalidField("scopes", "each scope must be non-empty and without spaces")
        }
        let resources = try reader.strings("resources", maximum: 2048)
        for resource in resources {
            guard let url = URL(string: resource), url.scheme != nil, url.fragment == nil else {
                throw VaultError.invalidField("resources", "each must be an absolute URI without a fragment (RFC 8707)")
            }
        }
        var extra: [String: String] = [:]
        switch fields["parameters"] {
        case nil, .null?: break
        case .object(let object)?:
            for (name, value) in object {
                guard case .string(let text) = value, text.utf8.count <= 2048 else {
                    throw VaultError.invalidField("parameters.\(name)", "must be a string of at most 2048 bytes")
                }
                extra[name] = text
            }
        case let other?: throw VaultError.invalidField("parameters", "expected an object, got \(other.typeName)")
        }
        let mode: SignInStart.Mode
        switch try reader.string("mode", required: false, maximum: 16) {
        case nil: mode = .url
        case let text?:
            guard let parsed = SignInStart.Mode(rawValue: text) else {
                throw VaultError.invalidField("mode", "must be url or parameters")
            }
            mode = parsed
        }
        return SignInStart(
            credentialID: id, provider: provider, redirectURI: redirectURI, scopes: scopes,
            loginHint: try reader.string("login_hint", required: false, maximum: 256),
            prompt: try reader.string("prompt", required: false, maximum: 64), resources: resources, extra: extra,
            labels: fields["labels"] == nil || fields["labels"] == .null ? nil : try decodeLabels(fields["labels"]),
            mode: mode,
            audit: AuditEvent(at: vault.clock.now, operation: .credentialAuthorize, outcome: .allowed))
    }

    /// `{"callback_url": …}` (the whole URL the browser was sent to), or its parts: `state` and
    /// `code` or `error` (with `error_description`), and `iss`.
    func decodeCallback(_ body: ByteBuffer) throws -> AuthorizationCallback {
        let fields = try bodyMembers(
            body, known: ["callback_url", "state", "code", "error", "error_description", "iss"])
        let reader = FieldReader(fields: fields)
        if let url = try reader.string("callback_url", required: false, maximum: 8192) {
            guard fields.count == 1 else {
                throw VaultError.invalidField("callback_url", "give either callback_url or its parts, not both")
            }
            return try AuthorizationCallback.parse(url: url)
        }
        var pairs: [(name: String, value: String)] = []
        for name in ["state", "code", "error", "error_description", "iss"] {
            if let value = try reader.string(name, required: false, maximum: 4096) { pairs.append((name, value)) }
        }
        return try AuthorizationCallback.parse(pairs)
    }
}
