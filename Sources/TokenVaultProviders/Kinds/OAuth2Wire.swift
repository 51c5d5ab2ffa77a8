import Foundation
import NIOHTTP1
import Synchronization
import TokenVaultCore

/// A provider instance of kind `oauth2`: any RFC 6749 token endpoint, with RFC 7009 revocation
/// and RFC 8414 / OIDC discovery.
public typealias OAuth2Provider = KindProvider<OAuth2Wire>

/// The requests of kind `oauth2`: the RFC 6749 forms, the configured headers and client
/// authentication, to endpoints configured or discovered (once, on first use).
public final class OAuth2Wire: ProviderWire {
    public static let kind = "oauth2"
    public let configuration: OAuth2Configuration
    /// Discovered endpoints, fetched once; a failed fetch is retried on the next call.
    let discovery = Mutex<DiscoveryState>(.notStarted)
    /// The daemon's signatures and client keys; nil: no id-token signature is checked and no
    /// client assertion can be signed.
    let services: ProviderServices?
    /// The issuer's keys, cached (`IDTokenVerifier`).
    let idTokens: IDTokenVerifier?

    public convenience init(configuration: OAuth2Configuration) {
        self.init(configuration: configuration, services: nil)
    }

    public init(configuration: OAuth2Configuration, services: ProviderServices?) {
        self.configuration = configuration
        self.services = services
        idTokens = services.map {
            IDTokenVerifier(
                cryptography: $0.cryptography, refetchInterval: configuration.jwksRefetchSeconds,
                maximumAge: configuration.metadataRefreshSeconds)
        }
    }

    public var supportsRevocation: Bool {
        switch configuration.endpoints {
        case .fixed(_, let revocation, _, _, _):
            return revocation != nil
        case .discovery, .issuer:
            // Until the document is read, assume revocation exists: answering false would make
            // a delete skip revocation and leave the tokens alive at the provider.
            return discovery.withLock { state in
                if case .discovered(let endpoints, _, _) = state { return endpoints.revocation != nil }
                return true
            }
        }
    }

    public func refreshCall(_ request: RefreshRequest, over http: ProviderHTTPClient) async throws(ProviderFailure)
        -> TokenCall
    {
        var form = FormBody()
        form.append("grant_type", "refresh_token")
        form.append("refresh_token", secret: request.refreshToken)
        if configuration.sendScope, !request.scopes.isEmpty {
            form.append("scope", request.scopes.joined(separator: " "))
        }
        return try await tokenCall(form, secrets: [request.refreshToken], over: http)
    }

    /// RFC 6749 section 4.1.3 with PKCE: `grant_type=authorization_code`, `code`, `redirect_uri`,
    /// `code_verifier`, and `client_id` (always in the body, as public clients must send it).
    public func exchangeCall(_ request: CodeExchangeRequest, over http: ProviderHTTPClient)
        async throws(ProviderFailure) -> TokenCall
    {
        var form = FormBody()
        form.append("grant_type", request.grant.rawValue)
        switch request.grant {
        case .authorizationCode:
            form.append("code", secret: request.code)
            form.append("redirect_uri", request.redirectURI)
        case .deviceCode:
            // RFC 8628 section 3.4.
            form.append("device_code", secret: request.code)
        }
        if let verifier = request.codeVerifier { form.append("code_verifier", secret: verifier) }
        if configuration.clientAuthentication == .clientSecretBasic { form.append("client_id", configuration.clientID) }
        return try await tokenCall(
            form, secrets: [request.code] + (request.codeVerifier.map { [$0] } ?? []), over: http)
    }

    /// RFC 8693 section 2.1: the subject token and its type, each audience and resource, the
    /// scope and the requested token type, with the client's authentication.
    public func tokenExchangeCall(
        _ request: TokenExchangeRequest, subjectToken: SecretBytes, over http: ProviderHTTPClient
    ) async throws(ProviderFailure) -> TokenCall? {
        var form = FormBody()
        form.append("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange")
        form.append("subject_token", secret: subjectToken)
        form.append("subject_token_type", TokenExchangeRequest.accessTokenType)
        for audience in request.audiences { form.append("audience", audience) }
        for resource in request.resources { form.append("resource", resource) }
        if !request.scopes.isEmpty { form.append("scope", request.scopes.joined(separator: " ")) }
        if let type = request.requestedTokenType { form.append("requested_token_type", type) }
        return try await tokenCall(form, secrets: [subjectToken], over: http)
    }

    /// RFC 6749 section 4.4: `grant_type=client_credentials` with the scope, each audience and each
    /// resource (RFC 8707), authenticated as the client. Only what the instance's
    /// `client_credentials` option lists may be asked (`ClientCredentialsPolicy`), at a put and
    /// at every renewal, so narrowing the option stops renewals too; anything else is refused
    /// before it is sent.
    public func grantCall(_ request: GrantRequest, over http: ProviderHTTPClient) async throws(ProviderFailure)
        -> TokenCall?
    {
        guard request.grant.type == .clientCredentials else {
            throw ProviderFailure(
                kind: .misconfigured, code: .grantNotSupported,
                message: "a \(request.grant.type.rawValue) grant is made as a token exchange, not at this call")
        }
        guard let policy = configuration.clientCredentials else {
            throw ProviderFailure(
                kind: .misconfigured, code: .grantNotSupported,
                message: "provider instance \(configuration.providerName) does not allow client credentials "
                    + "grants: its client_credentials option lists the scopes, audiences and resources they may ask")
        }
        if let refusal = policy.refusal(of: request.grant) {
            throw ProviderFailure(kind: .misconfigured, code: .grantNotSupported, message: refusal)
        }
        var form = FormBody()
        form.append("grant_type", request.grant.type.rawValue)
        if !request.grant.scopes.isEmpty { form.append("scope", request.grant.scopes.joined(separator: " ")) }
        for audience in request.grant.audiences { form.append("audience", audience) }
        for resource in request.grant.resources { form.append("resource", resource) }
        return try await tokenCall(form, secrets: [], over: http)
    }

    /// RFC 7009 to the configured or discovered revocation endpoint; nil when there is none.
    public func revocationCall(_ token: SecretBytes, hint: TokenHint, over http: ProviderHTTPClient)
        async throws(ProviderFailure) -> RevocationCall?
    {
        guard let revocation = try await resolveEndpoints(over: http).revocation else { return nil }
        var form = FormBody()
        form.append("token", secret: token)
        form.append("token_type_hint", hint.rawValue)
        var headers = HTTPHeaders()
        let assertion = try authenticate(&headers, &form, endpoints: try await resolveEndpoints(over: http))
        return RevocationCall(
            url: revocation, form: form, headers: headers,
            secrets: [token] + (configuration.clientSecret.map { [$0] } ?? []) + (assertion.map { [$0] } ?? []))
    }

    /// A token request (configured headers and client authentication added) to the token endpoint.
    private func tokenCall(_ form: FormBody, secrets sent: [SecretBytes], over http: ProviderHTTPClient)
        async throws(ProviderFailure) -> TokenCall
    {
        let endpoints = try await resolveEndpoints(over: http)
        var call = TokenCall(
            url: endpoints.token, form: form, secrets: sent + (configuration.clientSecret.map { [$0] } ?? []))
        if let assertion = try authenticate(&call.headers, &call.form, endpoints: endpoints) {
            call.secrets.append(assertion)
        }
        return call
    }

    /// The configured extra headers, then the client's credentials (RFC 6749 section 2.3.1): a
    /// JWT method's assertion is addressed to the token endpoint (RFC 7523 section 3 allows it,
    /// OpenID Connect Core section 9 asks for it, RFC 9126 section 2 has pushed requests accept it).
    /// Returns the client assertion it added, if any, to be kept out of messages.
    @discardableResult
    func authenticate(_ headers: inout HTTPHeaders, _ form: inout FormBody, endpoints: ResolvedEndpoints)
        throws(ProviderFailure) -> SecretBytes?
    {
        for (name, value) in configuration.headers { headers.replaceOrAdd(name: name, value: value) }
        let method = configuration.clientAuthentication
        let assertion = method.usesAssertion ? try clientAssertion(audience: endpoints.token) : nil
        configuration.clientAuthentication.apply(
            clientID: configuration.clientID, secret: configuration.clientSecret, assertion: assertion,
            headers: &headers, form: &form)
        return assertion
    }

    /// A new client assertion for `audience`, signed with the instance's client key or its secret.
    private func clientAssertion(audience: String) throws(ProviderFailure) -> SecretBytes {
        func failure(_ why: String) -> ProviderFailure {
            ProviderFailure(
                kind: .misconfigured, code: .signerFailed,
                message: OperatorText.clean("no client assertion could be signed: \(why)"))
        }
        guard let services else { throw failure("the instance was built without the daemon's keys") }
        do {
            switch configuration.clientAuthentication {
            case .clientSecretJWT:
                guard let secret = configuration.clientSecret else { throw failure("no client secret") }
                return try ClientAssertion.make(
                    clientID: configuration.clientID, audience: audience, now: Date(), algorithm: .hs256, keyID: nil
                ) { services.cryptography.hmacSHA256(key: secret, $0) }
            default:
                let key = try services.clientKey(for: configuration.providerName)
                return try ClientAssertion.make(
                    clientID: configuration.clientID, audience: audience, now: Date(), algorithm: key.algorithm,
                    keyID: key.keyID, sign: key.sign)
            }
        } catch let error as ProviderFailure {
            throw error
        } catch {
            throw failure("\(error)")
        }
    }

    /// An endpoint answered 404 or 410: the server may have moved it, so discovered metadata is
    /// read again.
    public func noteFailure(_ failure: ProviderFailure) {
        if failure.httpStatus == 404 || failure.httpStatus == 410 { endpointMoved() }
    }

    /// How the instance checks id tokens, given the endpoints in use: the one rule `vet` applies
    /// and `tokenvault providers show` reports.
    enum IDTokenRule {
        /// By signature, with the issuer's keys.
        case jwks(url: String, rules: IDTokenVerifier.Rules)
        /// Trusted from the token endpoint's TLS (`id_token_signature: tls`, or no JWKS known).
        case tls
        /// `id_token_signature: jwks`, but the keys cannot be found: every id token is refused.
        case missing(String)
    }

    func idTokenRule(_ endpoints: ResolvedEndpoints) -> IDTokenRule {
        guard configuration.idTokenSignature != .tls else { return .tls }
        if let jwks = endpoints.jwks, idTokens != nil, let issuer = endpoints.issuer {
            return .jwks(
                url: jwks,
                rules: IDTokenVerifier.Rules(
                    issuer: issuer, clientID: configuration.clientID,
                    algorithms: configuration.idTokenAlgorithms ?? endpoints.idTokenAlgorithms))
        }
        guard configuration.idTokenSignature == .jwks else { return .tls }
        if idTokens == nil { return .missing("the instance was built without the daemon's keys") }
        return .missing(endpoints.jwks == nil ? "the server publishes no JWKS (jwks_uri)" : "no issuer is known")
    }

    /// Checks the answer's id token (`idTokenRule`); one that is not accepted is removed, and the
    /// answer says why (`idTokenRejection`): `id_token_invalid` when the token was refused,
    /// `provider_unavailable` when it could not be checked (the server's keys or metadata could not
    /// be read), so a sign-in answered while the daemon was down waits in the spool for a retry.
    public func vet(_ payload: inout TokenPayload, over http: ProviderHTTPClient) async {
        guard let idToken = payload.secrets.idToken, configuration.idTokenSignature != .tls else { return }
        let verdict: IDTokenVerifier.Verdict?
        do throws(ProviderFailure) {
            switch idTokenRule(try await resolveEndpoints(over: http)) {
            case .tls: verdict = nil
            case .missing(let why): verdict = .refused(why)
            case .jwks(let url, let rules):
                let received = payload.sentAt.map { Date(timeIntervalSince1970: $0.seconds) } ?? Date()
                verdict = await idTokens?.verdict(on: idToken, jwks: url, rules: rules, now: received, over: http)
            }
        } catch {
            verdict = .unverifiable("the server's metadata could not be read: \(error.message)")
        }
        guard let verdict else { return }
        payload.secrets.idToken = nil
        payload.subject = nil
        switch verdict {
        case .refused(let why):
            payload.idTokenRejection = VaultError(code: .idTokenInvalid, message: OperatorText.clean(why))
        case .unverifiable(let why):
            payload.idTokenRejection = VaultError(
                code: .providerUnavailable, message: OperatorText.clean("the id token could not be checked: \(why)"))
        }
    }
}

extension KindProvider where Wire == OAuth2Wire {
    /// Fetches the discovery document now (it is otherwise fetched on first use), so a daemon
    /// can report a broken `discovery_url` or `issuer` at start-up. Returns the endpoints in use.
    @discardableResult
    public func discover() async throws(ProviderFailure) -> (tokenEndpoint: String, revocationEndpoint: String?) {
        let endpoints = try await wire.resolveEndpoints(over: http)
        return (endpoints.token, endpoints.revocation)
    }
}
