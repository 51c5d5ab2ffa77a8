import NIOHTTP1
import TokenVaultCore

/// A provider instance of kind `tinkoff-id` (T-ID).
public typealias TinkoffIDProvider = KindProvider<TinkoffIDWire>

/// The requests of kind `tinkoff-id`. Its wire rules differ from plain RFC 6749 in small ways the
/// SDKs rely on (docs/providers/tinkoff-id.md): HTTP Basic always (a mobile client's password is
/// empty), `client_id` in the body as well, and the header `X-SSO-No-Adapter: true` on every
/// call, without which T-ID answers differently. Error bodies (`error_message`,
/// `limit_exceeded`) are read by the shared classifier.
public struct TinkoffIDWire: ProviderWire {
    public static let kind = "tinkoff-id"
    public let configuration: TinkoffIDConfiguration

    public init(configuration: TinkoffIDConfiguration) { self.configuration = configuration }

    public var supportsRevocation: Bool { true }

    /// `grant_type=refresh_token, refresh_token, client_id`. T-ID may answer without a refresh
    /// token (the user refused offline access): the credential then simply runs out.
    public func refreshCall(_ request: RefreshRequest, over http: ProviderHTTPClient) -> TokenCall {
        var form = FormBody()
        form.append("grant_type", "refresh_token")
        form.append("refresh_token", secret: request.refreshToken)
        form.append("client_id", configuration.clientID)
        return call(form, secrets: [request.refreshToken])
    }

    /// `grant_type=authorization_code, code, code_verifier, redirect_uri, client_id`.
    public func exchangeCall(_ request: CodeExchangeRequest, over http: ProviderHTTPClient) -> TokenCall {
        var form = FormBody()
        form.append("grant_type", "authorization_code")
        form.append("code", secret: request.code)
        if let verifier = request.codeVerifier { form.append("code_verifier", secret: verifier) }
        form.append("redirect_uri", request.redirectURI)
        form.append("client_id", configuration.clientID)
        return call(form, secrets: [request.code] + (request.codeVerifier.map { [$0] } ?? []))
    }

    /// `token, token_type_hint` to `/auth/revoke`; `{}` and `OK` are both success.
    public func revocationCall(_ token: SecretBytes, hint: TokenHint, over http: ProviderHTTPClient)
        -> RevocationCall?
    {
        var form = FormBody()
        form.append("token", secret: token)
        form.append("token_type_hint", hint.rawValue)
        return RevocationCall(
            url: configuration.revocationEndpoint, form: form, headers: headers(),
            secrets: [token] + (configuration.clientSecret.map { [$0] } ?? []))
    }

    private func call(_ form: FormBody, secrets: [SecretBytes]) -> TokenCall {
        TokenCall(
            url: configuration.tokenEndpoint, form: form, headers: headers(),
            secrets: secrets + (configuration.clientSecret.map { [$0] } ?? []))
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
