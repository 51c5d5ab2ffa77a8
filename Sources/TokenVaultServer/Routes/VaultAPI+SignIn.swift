import Foundation
import Hummingbird
import NIOCore
import TokenVaultCore

/// Sign-ins the vault starts and finishes itself (`credential:authorize`):
/// `POST /v1/credentials/{ns}/{name}/authorization` answers the authorization URL (or, for a
/// mobile SDK, the request's parameters) and keeps the state, PKCE verifier and nonce sealed;
/// `POST …/authorization/callback` takes what the redirect brought and redeems the code into
/// that credential, repairing it in place if it exists. `"mode": "device"` starts a device grant
/// (RFC 8628) instead: the answer is a user code, the daemon polls, and `GET …/authorization`
/// shows the caller's grants still waiting and how the last one ended. The caller never sees the
/// verifier or the device code, and gets the credential's metadata, never a token.
extension VaultAPI {
    func startSignIn(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let (peer, groups) = try await authorisedCaller(
            context, .credentialAuthorize, id: id, operation: .credentialAuthorize)
        try requireJSON(request)
        let engine = try requireEngine()
        var start = try decodeSignInStart(try await collectBody(request), id: id)
        start.audit = auditEvent(peer, .credentialAuthorize, id, .allowed, detail: start.provider)
        start.keepsSubject = !policy.allows(uid: peer.uid, groups: groups, .credentialWrite, in: id.namespace)
        let started: StartedSignIn
        do {
            started = try await engine.startSignIn(start)
        } catch {
            throw auditedFailure(error, peer, .credentialAuthorize, id, provider: start.provider)
        }
        audit.record(start.audit)
        metrics.recordSignIn("started")
        var document: [String: JSONValue] = [
            "expires_at": .string(started.expiresAt.description), "pushed": .bool(started.pushed),
        ]
        if let url = started.authorizationURL { document["authorization_url"] = .string(url) }
        if let parameters = started.parameters { document["parameters"] = Self.parameterObject(parameters) }
        if let device = started.device {
            document["user_code"] = .string(device.userCode)
            document["verification_uri"] = .string(device.verificationURI)
            if let complete = device.verificationURIComplete {
                document["verification_uri_complete"] = .string(complete)
            }
            document["interval"] = .integer(Int64(device.interval))
        }
        var response = try json(document, status: .created)
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// The caller's device grants still waiting for this credential, and how the caller's last
    /// sign-in into it ended (from the audit trail: the daemon's poller may have ended it on
    /// another node).
    func signInStatus(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let peer = try await authorise(context, .credentialAuthorize, id: id, operation: .credentialAuthorize)
        let pending = try await vault.devicePolls(for: id).filter { $0.uid == peer.uid }
        let now = vault.clock.now
        var document: [String: JSONValue] = [
            "pending": .array(
                pending.map { grant in
                    .object([
                        "kind": .string("device"), "provider": .string(grant.provider),
                        "started_at": .string(grant.createdAt.description),
                        "expires_at": .string(grant.expiresAt.description),
                        "next_poll_at": .string(max(grant.nextPollAt, now).description),
                        "interval": .integer(Int64(grant.interval)),
                    ])
                })
        ]
        if let last = try await lastSignIn(id, uid: peer.uid) {
            var ended: [String: JSONValue] = [
                "at": .string(last.event.at.description),
                "outcome": .string(last.event.outcome == AuditEvent.Outcome.allowed ? "authorized" : "failed"),
            ]
            if last.event.outcome != AuditEvent.Outcome.allowed, let reason = last.event.detail {
                ended["reason"] = .string(reason)
            }
            document["last"] = .object(ended)
        }
        var response = try json(document)
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
        } catch {
            metrics.recordSignIn("failed")
            let answered = auditedFailure(error, peer, .credentialAuthorized, id, provider: "the provider")
            // The state is spent: trying the same callback again cannot help.
            guard let problem = answered as? ProblemDetails else { throw answered }
            throw ProblemDetails(problem.code, detail: problem.detail + "; the sign-in is spent: start a new one")
        }
        let metadata = try await committed(redeemed, id: id)
        metrics.recordSignIn("finished")
        return stored(metadata, context, logged: "credential stored from a sign-in")
    }

    /// The caller's newest `credential.authorized` row about `id`, among the credential's last
    /// thousand rows (token reads are counted into one row a minute, so that reaches back far).
    private func lastSignIn(_ id: CredentialID, uid: UInt32) async throws -> StoredAuditEvent? {
        var cursor: Int64?
        for _ in 0..<5 {
            let page = try await vault.auditEvents(
                AuditQuery(.newestFirst, cursor: cursor, credentialID: id, limit: 200))
            if let found = page.first(where: {
                $0.event.operation == AuditOperation.credentialAuthorized.name && $0.event.uid == uid
            }) {
                return found
            }
            guard page.count == 200, let last = page.last else { return nil }
            cursor = last.id
        }
        return nil
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
        let redirectURI = try reader.string("redirect_uri", required: false, maximum: 2048)
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
                throw VaultError.invalidField("mode", "must be url, parameters or device")
            }
            mode = parsed
        }
        switch (mode, redirectURI) {
        case (.device, _?): throw VaultError.invalidField("redirect_uri", "a device sign-in has no redirect")
        case (.device, nil), (_, _?): break
        case (_, nil): throw VaultError.invalidField("redirect_uri", "is required")
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
