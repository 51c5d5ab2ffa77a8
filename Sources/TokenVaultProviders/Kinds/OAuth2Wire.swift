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

    public init(configuration: OAuth2Configuration) { self.configuration = configuration }

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
        authenticate(&headers, &form)
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
        authenticate(&call.headers, &call.form)
        return call
    }

    /// The configured extra headers, then the client's credentials (RFC 6749 section 2.3.1).
    func authenticate(_ headers: inout HTTPHeaders, _ form: inout FormBody) {
        for (name, value) in configuration.headers { headers.replaceOrAdd(name: name, value: value) }
        configuration.clientAuthentication.apply(
            clientID: configuration.clientID, secret: configuration.clientSecret, headers: &headers, form: &form)
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
