import Logging
import NIOHTTP1
import TokenVaultCore

/// A provider instance of kind `tinkoff-id` (T-ID). Its wire rules differ from plain RFC 6749
/// in small ways the SDKs rely on (`shared/design/providers.md`): HTTP Basic always (a mobile
/// client's password is empty), `client_id` in the body as well, and the header
/// `X-SSO-No-Adapter: true` on every call, without which T-ID answers differently.
/// Error bodies (`error_message`, `limit_exceeded`) are read by the shared classifier.
public final class TinkoffIDProvider: TokenProvider, ShutdownableProvider {
    public let name: String
    public let configuration: TinkoffIDConfiguration
    let http: ProviderHTTPClient

    public convenience init(
        settings: ProviderSettings, environment: [String: String], logger: Logger = OAuth2Provider.silentLogger
    ) throws(ProviderConfigurationError) {
        self.init(configuration: try TinkoffIDConfiguration(settings, environment: environment), logger: logger)
    }

    public init(
        configuration: TinkoffIDConfiguration, transport: (any ProviderTransport)? = nil,
        logger: Logger = OAuth2Provider.silentLogger
    ) {
        self.name = configuration.providerName
        self.configuration = configuration
        self.http = ProviderHTTPClient(
            providerName: configuration.providerName,
            transport: transport ?? DirectTransport(settings: configuration.httpSettings), logger: logger)
    }

    public func shutdown() async throws { try await http.shutdown() }

    public var supportsRevocation: Bool { true }
    public var clientID: String? { configuration.clientID }

    /// `grant_type=refresh_token, refresh_token, client_id`. T-ID may answer without a refresh
    /// token (the user refused offline access): the credential then simply runs out.
    public func refresh(_ request: RefreshRequest) async throws(ProviderFailure) -> TokenPayload {
        var form = FormBody()
        form.append("grant_type", "refresh_token")
        form.append("refresh_token", secret: request.refreshToken)
        form.append("client_id", configuration.clientID)
        return try await http.token(
            call(
                form, secrets: [request.refreshToken], operation: "refresh", credential: request.credentialID,
                providerCall: request.call))
    }

    /// `grant_type=authorization_code, code, code_verifier, redirect_uri, client_id`.
    public func exchange(_ request: CodeExchangeRequest) async throws(ProviderFailure) -> TokenPayload {
        var form = FormBody()
        form.append("grant_type", "authorization_code")
        form.append("code", secret: request.code)
        if let verifier = request.codeVerifier { form.append("code_verifier", secret: verifier) }
        form.append("redirect_uri", request.redirectURI)
        form.append("client_id", configuration.clientID)
        return try await http.token(
            call(
                form, secrets: [request.code] + (request.codeVerifier.map { [$0] } ?? []), operation: "exchange",
                credential: request.credentialID, providerCall: request.call))
    }

    /// `token, token_type_hint` to `/auth/revoke`; `{}` and `OK` are both success.
    public func revoke(_ token: SecretBytes, hint: TokenHint, call: ProviderCall?) async throws(ProviderFailure) {
        var form = FormBody()
        form.append("token", secret: token)
        form.append("token_type_hint", hint.rawValue)
        try await http.revoke(
            configuration.revocationEndpoint, form: form, headers: headers(),
            secrets: [token] + (configuration.clientSecret.map { [$0] } ?? []), call: call)
    }

    private func call(
        _ form: FormBody, secrets: [SecretBytes], operation: String, credential: CredentialID,
        providerCall: ProviderCall?
    ) -> TokenCall {
        TokenCall(
            url: configuration.tokenEndpoint, form: form, headers: headers(),
            secrets: secrets + (configuration.clientSecret.map { [$0] } ?? []), operation: operation,
            credential: credential, providerCall: providerCall)
    }

    /// `Authorization: Basic` (`client_id:` with an empty password for a mobile client),
    /// `X-SSO-No-Adapter: true` and `Accept: application/json`.
    private func headers() -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "X-SSO-No-Adapter", value: "true")
        headers.add(name: "Accept", value: "application/json")
        var unused = FormBody()
        ClientAuthentication.clientSecretBasic.apply(
            clientID: configuration.clientID, secret: configuration.clientSecret, headers: &headers, form: &unused)
        return headers
    }
}
