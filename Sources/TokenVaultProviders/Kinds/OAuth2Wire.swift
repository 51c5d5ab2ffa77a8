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
    let signing: ProviderSigning?
    /// The issuer's keys, cached (`IDTokenVerifier`).
    let idTokens: IDTokenVerifier?

    public convenience init(configuration: OAuth2Configuration) {
        self.init(configuration: configuration, signing: nil)
    }

    public init(configuration: OAuth2Configuration, signing: ProviderSigning?) {
        self.configuration = configuration
        self.signing = signing
        idTokens = signing.map {
            IDTokenVerifier(cryptography: $0.cryptography, refetchInterval: configuration.jwksRefetchSeconds)
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
                if case .discovered(let endpoints) = state { return endpoints.revocation != nil }
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

    /// RFC 7009 to the configured or discovered revocation endpoint; nil when there is none.
    public func revocationCall(_ token: SecretBytes, hint: TokenHint, over http: ProviderHTTPClient)
        async throws(ProviderFailure) -> RevocationCall?
    {
        guard let revocation = try await resolveEndpoints(over: http).revocation else { return nil }
        var form = FormBody()
        form.append("token", secret: token)
        form.append("token_type_hint", hint.rawValue)
        var headers = HTTPHeaders()
        try authenticate(&headers, &form, endpoints: try await resolveEndpoints(over: http))
        return RevocationCall(
            url: revocation, form: form, headers: headers,
            secrets: [token] + (configuration.clientSecret.map { [$0] } ?? []))
    }

    /// A token request (configured headers and client authentication added) to the token endpoint.
    private func tokenCall(_ form: FormBody, secrets sent: [SecretBytes], over http: ProviderHTTPClient)
        async throws(ProviderFailure) -> TokenCall
    {
        let endpoints = try await resolveEndpoints(over: http)
        var call = TokenCall(
            url: endpoints.token, form: form, secrets: sent + (configuration.clientSecret.map { [$0] } ?? []))
        try authenticate(&call.headers, &call.form, endpoints: endpoints)
        return call
    }

    /// The configured extra headers, then the client's credentials (RFC 6749 section 2.3.1): a
    /// JWT method's assertion is addressed to the token endpoint, which RFC 7523 section 3 and
    /// RFC 9126 section 2 have every endpoint of the server accept.
    func authenticate(_ headers: inout HTTPHeaders, _ form: inout FormBody, endpoints: ResolvedEndpoints)
        throws(ProviderFailure)
    {
        for (name, value) in configuration.headers { headers.replaceOrAdd(name: name, value: value) }
        let method = configuration.clientAuthentication
        let assertion = method.usesAssertion ? try clientAssertion(audience: endpoints.token) : nil
        configuration.clientAuthentication.apply(
            clientID: configuration.clientID, secret: configuration.clientSecret, assertion: assertion,
            headers: &headers, form: &form)
    }

    /// A new client assertion for `audience`, signed with the instance's client key or its secret.
    private func clientAssertion(audience: String) throws(ProviderFailure) -> SecretBytes {
        func failure(_ why: String) -> ProviderFailure {
            ProviderFailure(
                kind: .misconfigured, code: .signerFailed,
                message: OperatorText.clean("no client assertion could be signed: \(why)"))
        }
        guard let signing else { throw failure("the instance was built without the daemon's keys") }
        do {
            switch configuration.clientAuthentication {
            case .clientSecretJWT:
                guard let secret = configuration.clientSecret else { throw failure("no client secret") }
                return try ClientAssertion.make(
                    clientID: configuration.clientID, audience: audience, now: Date(), algorithm: .hs256, keyID: nil
                ) { signing.cryptography.hmacSHA256(key: secret, $0) }
            default:
                let key = try signing.clientKey(for: configuration.providerName)
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

    /// Checks the answer's id token by signature (`IDTokenVerifier`) unless the instance keeps the
    /// TLS rule; one that fails is removed, and the answer says why (`idTokenRejection`).
    public func vet(_ payload: inout TokenPayload, over http: ProviderHTTPClient) async {
        guard let idToken = payload.secrets.idToken, configuration.idTokenSignature != .tls else { return }
        var problem: String?
        do throws(ProviderFailure) {
            let endpoints = try await resolveEndpoints(over: http)
            if let jwks = endpoints.jwks, let idTokens, let issuer = endpoints.issuer {
                let rules = IDTokenVerifier.Rules(
                    issuer: issuer, clientID: configuration.clientID,
                    algorithms: configuration.idTokenAlgorithms ?? endpoints.idTokenAlgorithms)
                let received = payload.sentAt.map { Date(timeIntervalSince1970: $0.seconds) } ?? Date()
                problem = await idTokens.problem(with: idToken, jwks: jwks, rules: rules, now: received, over: http)
            } else if configuration.idTokenSignature == .jwks {
                problem =
                    idTokens == nil
                    ? "the instance was built without the daemon's keys"
                    : endpoints.jwks == nil ? "the server publishes no JWKS (jwks_uri)" : "no issuer is known"
            }
        } catch {
            problem = "the server's metadata could not be read: \(error.message)"
        }
        guard let problem else { return }
        payload.secrets.idToken = nil
        payload.subject = nil
        payload.idTokenRejection = VaultError(code: .idTokenInvalid, message: OperatorText.clean(problem))
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
