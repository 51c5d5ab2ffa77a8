import AsyncHTTPClient
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import NIOSSL
import TokenVaultCore
import TokenVaultProviders

/// The proxy: `<METHOD> /v1/credentials/{ns}/{name}/proxy/<path>` sends `<METHOD> <base><path>`
/// upstream with the credential's access token attached, and streams the answer back. The
/// caller's method, headers and body pass as they are (so `curl -X … -H … -d …` works unchanged),
/// the route stays under the credential (authorised like every route of it: here
/// `credential:use`, which `token:read` also gives), and the token never reaches the caller.
extension VaultAPI {
    func proxy(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let peer = try await authorise(context, .credentialUse, id: id, operation: .credentialProxy)
        guard let upstream = options.upstream else {
            throw ProblemDetails(.engineUnavailable, detail: "this daemon runs without the proxy")
        }
        // Read once: its provider decides where the call may go, its token is attached below.
        let stored = try await readCredential(id)
        let metadata = stored.metadata
        let method = request.method.rawValue
        var destination = "-"
        // Every refusal past this point is audited and counted, like the calls that went out.
        func refuse(_ problem: ProblemDetails) -> ProblemDetails {
            proxyRefused(peer, id, method: method, destination: destination, provider: metadata.provider, problem)
        }
        let table = vault.providers
        guard let settings = table.settings[metadata.provider], !settings.apiBases.isEmpty else {
            throw refuse(
                ProblemDetails(
                    .upstreamNotAllowed,
                    detail: "provider instance \(metadata.provider) lists no api_base_urls: its credentials cannot be "
                        + "used through the proxy"))
        }
        let target: UpstreamURL
        do {
            target = try proxyTarget(
                path: request.head.path ?? "", absoluteURL: request.headers[.tokenVaultUpstreamURL],
                chosenBase: request.headers[.tokenVaultUpstreamBase], id: id, bases: settings.apiBases,
                provider: metadata.provider)
        } catch let problem as ProblemDetails {
            throw refuse(problem)
        }
        destination = Self.audited(target)
        guard limiter.admitProxyCall(uid: peer.uid) else {
            throw refuse(
                ProblemDetails(
                    .tooManyProxyCalls,
                    detail: "uid \(peer.uid) has \(options.connections.maximumProxyCallsPerUID) proxied calls in "
                        + "flight (limits.max_proxy_calls_per_uid)", retryAfter: 1))
        }
        let slot = ProxyCallSlot { [limiter] in limiter.releaseProxyCall(uid: peer.uid) }
        let body: ProxiedBody
        do {
            body = try await proxiedBody(request)
        } catch let problem as ProblemDetails {
            throw refuse(problem)
        }
        // Under a base that names an audience, the call carries a token derived for it (RFC
        // 8693) from the credential's, never the credential's own.
        let audience = settings.apiBases.base(holding: target)?.audience
        func forUpstream(_ credential: Credential) async throws -> Credential {
            guard let audience else { return credential }
            do {
                return try await derived(credential, audience: audience)
            } catch let failure as ProviderFailure {
                throw refuse(Self.problem(failure, at: metadata.provider))
            } catch let problem as ProblemDetails {
                throw refuse(problem)
            }
        }
        var credential: Credential
        switch try await usableCredential(id, minimumTTL: Double(options.proxy.minimumTTLSeconds), read: stored) {
        case .success(let usable): credential = try await forUpstream(usable)
        case .failure(let refusal): throw refuse(refusal)
        }
        let use: UpstreamClients.Use
        let dpop: DPoPSession?
        do {
            use = try upstream.use(for: settings, version: table.version, owner: .init(credential: id, uid: peer.uid))
            dpop = try upstream.dpopSession(for: settings)
        } catch let error as ProviderConfigurationError {
            throw refuse(ProblemDetails(.providerNotConfigured, detail: error.description))
        } catch {
            throw refuse(
                ProblemDetails(
                    .providerNotConfigured, detail: "\(metadata.provider)'s DPoP key is unavailable: \(error)"))
        }
        // The client is held until the answer has streamed back, with the caller's slot.
        slot.hold(use)
        let client = use.client
        let forwarded = ProxyHeaders.forward(request.headers, adding: settings.proxyHeaders)
        let started = ContinuousClock.now
        let deadline = NIODeadline.now() + .seconds(Int64(options.proxy.deadlineSeconds))
        var response = try await send(
            client, method: method, target: target, headers: forwarded, body: body, credential: credential,
            dpop: dpop, deadline: deadline, refuse: refuse)
        // RFC 9449 section 9: a resource server that wants a nonce gets one new proof with it (it
        // did not act on the call); one that refused the proof (a jti it has seen) gets one too
        // when the call may be made twice. The token is not in question: nothing is refreshed.
        if response.status == .unauthorized, dpop != nil, body.isReplayable,
            case let challenge = Self.challengeError(response.headers),
            DPoPSession.isNonceChallenge(error: challenge)
                || (DPoPSession.isRefusedProof(error: challenge) && Self.repeatableMethods.contains(request.method))
        {
            response = try await send(
                client, method: method, target: target, headers: forwarded, body: body, credential: credential,
                dpop: dpop, deadline: deadline, refuse: refuse)
        }
        var refreshed = false
        var tokens = [credential.secrets.accessToken, stored.secrets.accessToken]
        if response.status == .unauthorized, body.isReplayable, engine != nil,
            Self.refusesToken(response.headers, method: request.method)
        {
            // A credential gone or a store that fails meanwhile: the 401 as it came.
            if let renewed = (try? await renewedAfterRefusal(id, used: credential)) ?? nil {
                credential = try await forUpstream(renewed)
                // The token sent now (a newly derived one under an audience base), and the
                // credential's own, are kept out of what the caller sees.
                tokens += [credential.secrets.accessToken, renewed.secrets.accessToken]
                refreshed = true
                response = try await send(
                    client, method: method, target: target, headers: forwarded, body: body, credential: credential,
                    dpop: dpop, deadline: deadline, refuse: refuse)
            }
        }
        let status = Int(response.status.code)
        if let tooLarge = upstreamTooLarge(origin: target.origin, status: status, headers: response.headers) {
            throw refuse(tooLarge)
        }
        if let coding = Self.contentCoding(response.headers) {
            throw refuse(
                ProblemDetails(
                    .upstreamUnavailable,
                    detail: "\(target.origin) answered with Content-Encoding \(coding.prefix(40)) although asked for "
                        + "identity: the vault cannot look into it for the token"))
        }
        proxyAnswered(
            peer, id, method: method, destination: Self.audited(target), provider: metadata.provider, status: status,
            since: started
        )
        let headers = ProxyHeaders.returned(
            response.headers.map { ($0.name, $0.value) }, tokens: tokens, refreshed: refreshed)
        return Response(
            status: HTTPResponse.Status(code: status), headers: headers,
            body: ResponseBody(
                asyncSequence: CappedBody(
                    base: RedactedBody(base: response.body, tokens: tokens),
                    limit: options.proxy.maximumResponseBytes, slot: slot, deadline: deadline)))
    }

    /// A proxied call refused once authorised: audited and counted like the calls that went out.
    func proxyRefused(
        _ peer: PeerCredentials, _ id: CredentialID, method: String, destination: String, provider: String,
        _ problem: ProblemDetails
    ) -> ProblemDetails {
        audit.record(
            auditEvent(
                peer, .credentialProxy, id, .failed, detail: "\(method) \(destination) \(problem.code.rawValue)"))
        metrics.recordProxyCall(provider: provider, status: nil, duration: nil)
        return problem
    }

    /// A proxied call the upstream answered: its audit row (aggregated by method, destination and
    /// status class) and its metrics.
    func proxyAnswered(
        _ peer: PeerCredentials, _ id: CredentialID, method: String, destination: String, provider: String,
        status: Int, since started: ContinuousClock.Instant
    ) {
        audit.record(
            auditEvent(peer, .credentialProxy, id, .allowed, detail: "\(method) \(destination) \(status / 100)xx"))
        metrics.recordProxyCall(provider: provider, status: status, duration: .now - started)
    }

    /// Where a proxied call went, as its audit row names it: the origin and the path, never the
    /// query (which may carry what the caller would not have kept), the path cut at 200 bytes
    /// (it is ASCII: `UpstreamURL` refuses anything else).
    static func audited(_ target: UpstreamURL) -> String {
        guard target.path.utf8.count > 200 else { return target.origin + target.path }
        return target.origin + String(decoding: target.path.utf8.prefix(200), as: UTF8.self) + "…"
    }

    /// `credential` with a token derived for `audience` (RFC 8693, `RefreshEngine.exchangeToken`,
    /// from its cache while the token lives) in place of its own access token.
    func derived(_ credential: Credential, audience: String) async throws -> Credential {
        let metadata = credential.metadata
        let token = try await requireEngine().exchangeToken(
            TokenExchange(
                credential: metadata.id, provider: metadata.provider, createdAt: metadata.createdAt,
                generation: metadata.generation, subjectToken: credential.secrets.accessToken,
                request: TokenExchangeRequest(audiences: [audience])))
        var derived = credential
        derived.secrets.accessToken = token.accessToken
        derived.metadata.tokenType = token.tokenType
        return derived
    }

    /// After the upstream refused `used`'s token: one forced refresh (single flight, the on-demand
    /// limits apply) and the new token, or nil when none came (the caller gets the 401 as it came).
    func renewedAfterRefusal(_ id: CredentialID, used: Credential) async throws -> Credential? {
        guard let engine else { return nil }
        _ = try? await engine.refreshForced(id)
        guard case .success(let renewed) = try await usableCredential(id, minimumTTL: 0),
            renewed.metadata.generation != used.metadata.generation
        else { return nil }
        return renewed
    }

    /// The content coding of an answer other than `identity`, if it has one: its body would hide
    /// a token it echoes from `RedactedBody`.
    static func contentCoding(_ headers: HTTPHeaders) -> String? {
        let codings = headers[canonicalForm: "content-encoding"].map { $0.lowercased() }.filter { $0 != "identity" }
        return codings.isEmpty ? nil : codings.joined(separator: ", ")
    }

    /// The refusal of an answer whose `Content-Length` is over `proxy.max_response_bytes`; nil
    /// for one within it or of no declared length (then cut off while it streams, if it must be).
    func upstreamTooLarge(origin: String, status: Int, headers: HTTPHeaders) -> ProblemDetails? {
        guard let declared = headers.first(name: "content-length").flatMap(Int.init),
            declared > options.proxy.maximumResponseBytes
        else { return nil }
        return ProblemDetails(
            .upstreamTooLarge,
            detail: "\(origin) answered \(status) with \(declared) bytes; proxy.max_response_bytes is "
                + "\(options.proxy.maximumResponseBytes)")
    }

    /// What the caller's body becomes upstream: kept whole when it is small enough to send twice
    /// (`proxy.replay_body_bytes`, known from `Content-Length`), streamed otherwise.
    private func proxiedBody(_ request: Request) async throws -> ProxiedBody {
        let declared = request.headers[.contentLength].flatMap(Int.init)
        if let declared, declared > options.proxy.maximumRequestBytes {
            throw ProblemDetails(
                .payloadTooLarge,
                detail:
                    "the request body is \(declared) bytes; proxy.max_request_bytes is \(options.proxy.maximumRequestBytes)"
            )
        }
        let chunked = request.headers[.transferEncoding] != nil
        if !chunked, (declared ?? 0) <= options.proxy.replayBodyBytes {
            guard let declared, declared > 0 else { return .kept(nil) }
            return .kept(try await request.body.collect(upTo: declared))
        }
        return .streamed(
            CappedBody(base: request.body, limit: options.proxy.maximumRequestBytes, slot: nil), length: declared)
    }

    private func send(
        _ client: HTTPClient, method: String, target: UpstreamURL, headers: [(name: String, value: String)],
        body: ProxiedBody, credential: Credential, dpop: DPoPSession?, deadline: NIODeadline,
        refuse: (ProblemDetails) -> ProblemDetails
    ) async throws -> HTTPClientResponse {
        var outgoing = HTTPClientRequest(url: target.description)
        outgoing.method = NIOHTTP1.HTTPMethod(rawValue: method)
        for (name, value) in headers { outgoing.headers.add(name: name, value: value) }
        // Uncompressed, so that a token the answer echoes can be seen (`RedactedBody`).
        outgoing.headers.replaceOrAdd(name: "Accept-Encoding", value: "identity")
        let token = credential.secrets.accessToken
        outgoing.headers.replaceOrAdd(name: "Authorization", value: Self.authorization(credential, dpop: dpop != nil))
        if let dpop {
            do {
                outgoing.headers.replaceOrAdd(
                    name: "DPoP",
                    value: try dpop.proof(for: .resource, method: method, url: target.description, accessToken: token))
            } catch {
                throw refuse(ProblemDetails(.providerNotConfigured, detail: "no DPoP proof could be made: \(error)"))
            }
        }

        let (hasBody, streamed): (Bool, Bool)
        switch body {
        case .kept(let buffer): (hasBody, streamed) = (buffer.map { $0.readableBytes > 0 } ?? false, false)
        case .streamed: (hasBody, streamed) = (true, true)
        }
        if let method = HTTPRequest.Method(method),
            ProxyHeaders.endsConnection(method: method, hasBody: hasBody, streamed: streamed)
        {
            outgoing.headers.replaceOrAdd(name: "Connection", value: "close")
        }
        switch body {
        case .kept(let buffer?): outgoing.body = .bytes(buffer)
        case .kept(nil): break
        case .streamed(let stream, let length):
            outgoing.body = .stream(stream, length: length.map { .known(Int64($0)) } ?? .unknown)
        }
        do {
            let response = try await client.execute(outgoing, deadline: deadline)
            dpop?.remember(nonce: response.headers.first(name: "dpop-nonce"), from: .resource, url: target.description)
            return response
        } catch let error as CappedBody<RequestBody>.TooLarge {
            throw refuse(
                ProblemDetails(
                    .payloadTooLarge, detail: "the request body is larger than proxy.max_request_bytes (\(error.limit))"
                ))
        } catch let error as HTTPClientError
            where [.deadlineExceeded, .readTimeout, .connectTimeout].contains(error)
        {
            throw refuse(
                ProblemDetails(
                    .upstreamTimeout, detail: "\(target.origin) did not answer in time: \(Self.reason(error))"))
        } catch {
            throw refuse(
                ProblemDetails(
                    .upstreamUnavailable, detail: "\(target.origin) could not be reached: \(Self.reason(error))"))
        }
    }

    /// Where a proxied call goes: `TokenVault-Upstream-URL` (absolute), or the path and query after
    /// `/proxy` under the instance's first base, or under `TokenVault-Upstream-Base` (one of the
    /// list). Either way the URL must lie inside one of the instance's `api_base_urls`.
    /// `path`: the request target as received; `absoluteURL` and `chosenBase`: the caller's
    /// `TokenVault-Upstream-URL` and `TokenVault-Upstream-Base`.
    func proxyTarget(
        path requested: String, absoluteURL: String?, chosenBase: String?, id: CredentialID, bases: [APIBase],
        provider: String
    ) throws -> UpstreamURL {
        let prefix = "/v1/credentials/\(id.namespace)/\(id.name)/proxy"
        // The router matched a path written another way (`//`, an encoded segment): where it
        // was meant to go is not certain, so it goes nowhere.
        guard requested.hasPrefix(prefix),
            requested.count == prefix.count
                || ["/", "?"].contains(requested[requested.index(requested.startIndex, offsetBy: prefix.count)])
        else {
            throw ProblemDetails(
                .invalidRequest,
                detail: "write the proxy's path as \(prefix)/<upstream path>, without empty or encoded segments")
        }
        let rest = String(requested.dropFirst(prefix.count))
        func listed() -> String { bases.map(\.description).joined(separator: ", ") }
        let target: UpstreamURL
        do {
            if let absolute = absoluteURL {
                guard rest.isEmpty else {
                    throw ProblemDetails(
                        .invalidRequest,
                        detail:
                            "give the upstream either as the path after /proxy or in TokenVault-Upstream-URL, not both")
                }
                target = try UpstreamURL(parsing: absolute)
            } else {
                var base = bases[0]
                if let chosen = chosenBase {
                    let wanted = (try? APIBase(parsing: chosen))?.description
                    guard let listedBase = bases.first(where: { $0.description == wanted }) else {
                        throw ProblemDetails(
                            .upstreamNotAllowed,
                            detail:
                                "TokenVault-Upstream-Base \(chosen.prefix(200)) is not one of \(provider)'s api_base_urls (\(listed()))"
                        )
                    }
                    base = listedBase
                }
                target = try base.resolve(rest)
            }
        } catch let problem as UpstreamURLProblem {
            throw ProblemDetails(.upstreamNotAllowed, detail: problem.problem)
        }
        guard bases.base(holding: target) != nil else {
            throw ProblemDetails(
                .upstreamNotAllowed,
                detail: "\(target.origin)\(target.path) is outside \(provider)'s api_base_urls (\(listed()))")
        }
        return target
    }

    /// A 401 that says the token is no good, so a refresh and one more try may help:
    /// `WWW-Authenticate` names `invalid_token`; or it names no error at all (many APIs answer a
    /// bare 401) and the method is one a second try cannot do twice (`GET`, `PUT`, `DELETE`): a
    /// bare 401 to a `POST` may come from the application after it acted. Another error
    /// (`insufficient_scope`) is the caller's to read: a new token would not change it.
    static func refusesToken(_ headers: HTTPHeaders, method: HTTPRequest.Method) -> Bool {
        guard let error = challengeError(headers) else { return repeatableMethods.contains(method) }
        return error == "invalid_token"
    }

    /// Methods a second try cannot do twice (RFC 9110 idempotent methods among the proxy's).
    static let repeatableMethods: Set<HTTPRequest.Method> = [.get, .put, .delete]

    /// The first `error` parameter of the `WWW-Authenticate` challenges (RFC 6750 section 3, RFC
    /// 9449 section 7.1), lower-cased, quoted or not; nil when none names one.
    static func challengeError(_ headers: HTTPHeaders) -> String? {
        let challenge = headers["www-authenticate"].joined(separator: ", ").lowercased()
        var rest = Substring(challenge)
        while let found = rest.range(of: "error=") {
            let before = rest[..<found.lowerBound].last
            rest = rest[found.upperBound...]
            // `error_description=` and `error_uri=` do not match "error="; a name ending in
            // "error" (`x_error=`) is another parameter.
            guard before == nil || before == " " || before == "," else { continue }
            let value =
                rest.first == "\"" ? rest.dropFirst().prefix { $0 != "\"" } : rest.prefix { $0 != "," && $0 != " " }
            return String(value)
        }
        return nil
    }

    /// The `Authorization` header's value for `credential`'s access token.
    static func authorization(_ credential: Credential, dpop: Bool) -> String {
        scheme(credential.metadata.tokenType, dpop: dpop) + " " + credential.secrets.accessToken.revealString()
    }

    /// The `Authorization` scheme: the token's type when it is an HTTP token (RFC 9110 `token`
    /// characters), `DPoP` for a DPoP instance's token of no stated type, `Bearer` otherwise (a stored type with a control character would make the
    /// header invalid, and the HTTP client's error would quote it, token included).
    static func scheme(_ tokenType: String?, dpop: Bool = false) -> String {
        guard let tokenType, tokenType.utf8.count <= 64, HTTPToken.isToken(tokenType) else {
            return dpop ? "DPoP" : "Bearer"
        }
        return tokenType.lowercased() == "bearer" ? "Bearer" : tokenType
    }

    /// Why a call got no answer, in words that never quote the request (the HTTP client's own
    /// descriptions can include header values, the token's among them).
    static func reason(_ error: any Error) -> String {
        switch error {
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout: "the connection timed out"
            case .readTimeout: "a read timed out"
            case .deadlineExceeded: "proxy.deadline_seconds passed"
            case .remoteConnectionClosed: "the upstream closed the connection"
            case .cancelled: "the call was cancelled"
            case .bodyLengthMismatch: "the request body's length did not match Content-Length"
            default: "the HTTP client failed (\(type(of: error)))"
            }
        case let error as IOError: "a system call failed (errno \(error.errnoCode))"
        case is NIOSSLError: "the TLS handshake failed"
        case is ChannelError: "the connection failed"
        default: "\(type(of: error))"
        }
    }
}

/// A proxied call's request body: kept (it can be sent again after a refresh) or streamed.
enum ProxiedBody: Sendable {
    case kept(ByteBuffer?)
    case streamed(CappedBody<RequestBody>, length: Int?)

    var isReplayable: Bool {
        if case .kept = self { return true }
        return false
    }
}

extension HTTPField.Name {
    /// On a proxied call: the upstream URL, absolute (instead of a path after `/proxy`).
    static let tokenVaultUpstreamURL = HTTPField.Name("TokenVault-Upstream-URL")!
    /// On a proxied call: which of the instance's `api_base_urls` the path after `/proxy` is under.
    static let tokenVaultUpstreamBase = HTTPField.Name("TokenVault-Upstream-Base")!
    /// On a proxied call's answer: `upstream` (the upstream's answer, not the vault's), with
    /// `; refreshed` when the token was refused, refreshed and the call sent again.
    static let tokenVaultProxy = HTTPField.Name("TokenVault-Proxy")!
}
