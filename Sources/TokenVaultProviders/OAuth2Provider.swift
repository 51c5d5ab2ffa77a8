import Logging
import NIOHTTP1
import Synchronization
import TokenVaultCore

/// A provider instance of kind `oauth2`: any RFC 6749 token endpoint, with RFC 7009
/// revocation and RFC 8414 / OIDC discovery.
///
/// The HTTP work (one client per instance, timeouts, classification of every failure) is the
/// shared `ProviderHTTPClient`; this type only builds the RFC 6749 forms. No secret reaches a
/// log, an error message or a `description`. Call `shutdown()` before dropping it.
public final class OAuth2Provider: TokenProvider, ShutdownableProvider {
    public let name: String
    public let configuration: OAuth2Configuration
    let http: ProviderHTTPClient
    /// Discovered endpoints, fetched once; a failed fetch is retried on the next call.
    let discovery = Mutex<DiscoveryState>(.notStarted)

    public convenience init(
        settings: ProviderSettings, environment: [String: String], transport: (any ProviderTransport)? = nil,
        logger: Logger = OAuth2Provider.silentLogger
    ) throws(ProviderConfigurationError) {
        try self.init(
            configuration: OAuth2Configuration(settings, environment: environment), transport: transport, logger: logger
        )
    }

    public init(
        configuration: OAuth2Configuration, transport: (any ProviderTransport)? = nil,
        logger: Logger = OAuth2Provider.silentLogger
    )
        throws(ProviderConfigurationError)
    {
        self.name = configuration.providerName
        self.configuration = configuration
        self.http = ProviderHTTPClient(
            providerName: configuration.providerName,
            transport: transport ?? DirectTransport(settings: configuration.httpSettings), logger: logger)
    }

    /// A logger that drops everything, the default for callers that pass none.
    public static let silentLogger = Logger(label: "tokenvault.providers", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Closes the HTTP client. Safe to call more than once.
    public func shutdown() async throws { try await http.shutdown() }

    // MARK: TokenProvider

    public var supportsRevocation: Bool {
        switch configuration.endpoints {
        case .fixed(_, let revocation):
            return revocation != nil
        case .discovery:
            // Until the document is read, assume revocation exists: answering false would make
            // a delete skip revocation and leave the tokens alive at the provider.
            return discovery.withLock { state in
                if case .discovered(let endpoints) = state { return endpoints.revocation != nil }
                return true
            }
        }
    }

    public var clientID: String? { configuration.clientID }

    public func refresh(_ request: RefreshRequest) async throws(ProviderFailure) -> TokenPayload {
        var form = FormBody()
        form.append("grant_type", "refresh_token")
        form.append("refresh_token", secret: request.refreshToken)
        if configuration.sendScope, !request.scopes.isEmpty {
            form.append("scope", request.scopes.joined(separator: " "))
        }
        return try await tokenRequest(
            form, secrets: [request.refreshToken], operation: "refresh", credential: request.credentialID,
            call: request.call)
    }

    /// RFC 6749 section 4.1.3 with PKCE: `grant_type=authorization_code`, `code`, `redirect_uri`,
    /// `code_verifier`, and `client_id` (always in the body, as public clients must send it).
    public func exchange(_ request: CodeExchangeRequest) async throws(ProviderFailure) -> TokenPayload {
        var form = FormBody()
        form.append("grant_type", "authorization_code")
        form.append("code", secret: request.code)
        form.append("redirect_uri", request.redirectURI)
        if let verifier = request.codeVerifier { form.append("code_verifier", secret: verifier) }
        if configuration.clientAuthentication == .clientSecretBasic { form.append("client_id", configuration.clientID) }
        return try await tokenRequest(
            form, secrets: [request.code] + (request.codeVerifier.map { [$0] } ?? []), operation: "exchange",
            credential: request.credentialID, call: request.call)
    }

    /// POSTs a token request (configured headers and client authentication added) and reads the
    /// token response.
    private func tokenRequest(
        _ form: FormBody, secrets sent: [SecretBytes], operation: String, credential: CredentialID,
        call providerCall: ProviderCall?
    ) async throws(ProviderFailure) -> TokenPayload {
        let endpoints = try await resolveEndpoints()
        var call = TokenCall(
            url: endpoints.token, form: form, secrets: sent + (configuration.clientSecret.map { [$0] } ?? []),
            operation: operation, credential: credential, providerCall: providerCall)
        authenticate(&call.headers, &call.form)
        return try await http.token(call)
    }

    public func revoke(_ token: SecretBytes, hint: TokenHint, call: ProviderCall?) async throws(ProviderFailure) {
        let endpoints = try await resolveEndpoints()
        guard let revocation = endpoints.revocation else {
            throw ProviderFailure(
                kind: .misconfigured, code: .revocationNotSupported,
                message: "provider '\(name)' has no revocation endpoint")
        }
        var form = FormBody()
        form.append("token", secret: token)
        form.append("token_type_hint", hint.rawValue)
        var headers = HTTPHeaders()
        authenticate(&headers, &form)
        try await http.revoke(
            revocation, form: form, headers: headers,
            secrets: [token] + (configuration.clientSecret.map { [$0] } ?? []),
            call: call)
    }

    /// The configured extra headers, then the client's credentials (RFC 6749 section 2.3.1).
    private func authenticate(_ headers: inout HTTPHeaders, _ form: inout FormBody) {
        for (name, value) in configuration.headers { headers.replaceOrAdd(name: name, value: value) }
        configuration.clientAuthentication.apply(
            clientID: configuration.clientID, secret: configuration.clientSecret, headers: &headers, form: &form)
    }
}
