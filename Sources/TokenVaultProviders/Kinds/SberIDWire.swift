import NIOHTTP1
import TokenVaultCore

/// A provider instance of kind `sber-id` (Sber ID).
public typealias SberIDProvider = KindProvider<SberIDWire>

/// The requests of kind `sber-id`. What differs from plain RFC 6749:
/// - mutual TLS with the registration's PKCS#12 certificate (a refused certificate comes out as
///   a transient `tls_error` whose message says so: see `TLSFailure`);
/// - Sber's API gateway wants `rquid` (32 lower-case hex characters, new for every request, its
///   request id) and `x-ibm-client-id`; its own error shape is read by the shared classifier;
/// - `client_id` and `client_secret` in the form body;
/// - a 200 answer may be a compact JWT instead of JSON. It is refused as `malformed_response`,
///   not decoded: its signature (GOST) cannot be checked here, and an unchecked token response
///   must not be trusted;
/// - no revocation endpoint is documented, so deleting only removes the credential locally.
public struct SberIDWire: ProviderWire {
    public static let kind = "sber-id"
    public let configuration: SberIDConfiguration

    public init(configuration: SberIDConfiguration) { self.configuration = configuration }

    public var supportsRevocation: Bool { false }

    /// `grant_type` (`refresh_grant_type`, default `refresh_token`), `refresh_token`,
    /// `client_id`, `client_secret`. The format is not documented by Sber; this is the RFC 6749
    /// request on the same endpoint.
    public func refreshCall(_ request: RefreshRequest, over http: ProviderHTTPClient) -> TokenCall {
        var form = FormBody()
        form.append("grant_type", configuration.refreshGrantType)
        form.append("refresh_token", secret: request.refreshToken)
        return call(form, secrets: [request.refreshToken])
    }

    /// `grant_type=authorization_code`, `code`, `redirect_uri`, `code_verifier`, `client_id`,
    /// `client_secret`. The id token's `nonce` and `aud` are the caller's to check.
    public func exchangeCall(_ request: CodeExchangeRequest, over http: ProviderHTTPClient) -> TokenCall {
        var form = FormBody()
        form.append("grant_type", "authorization_code")
        form.append("code", secret: request.code)
        form.append("redirect_uri", request.redirectURI)
        if let verifier = request.codeVerifier { form.append("code_verifier", secret: verifier) }
        return call(form, secrets: [request.code] + (request.codeVerifier.map { [$0] } ?? []))
    }

    public func revocationCall(_ token: SecretBytes, hint: TokenHint, over http: ProviderHTTPClient)
        -> RevocationCall?
    { nil }

    private func call(_ form: FormBody, secrets: [SecretBytes]) -> TokenCall {
        var form = form
        var headers = HTTPHeaders()
        headers.add(name: "rquid", value: Self.newRequestID())
        headers.add(name: "x-ibm-client-id", value: configuration.clientID)
        headers.add(name: "Accept", value: "application/json")
        ClientAuthentication.clientSecretPost.apply(
            clientID: configuration.clientID, secret: configuration.clientSecret, headers: &headers, form: &form)
        return TokenCall(
            url: configuration.tokenEndpoint, form: form, headers: headers,
            secrets: secrets + [configuration.clientSecret])
    }

    /// 16 random bytes as 32 lower-case hex characters: the gateway's `RqUID`.
    static func newRequestID() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef")
        var text = ""
        text.reserveCapacity(32)
        for _ in 0..<16 {
            let byte = UInt8.random(in: .min ... .max, using: &generator)
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return text
    }
}

/// Sign-ins at Sber ID: the SDK's flow (`mode: parameters`: the app's SDK takes the state, nonce
/// and PKCE challenge the vault made, and the code it returns is redeemed over mutual TLS) or the
/// web page's. Sber ID documents neither pushed requests nor `iss` in its redirects.
extension SberIDWire: SignInWire {
    public func authorizationServer(over http: ProviderHTTPClient) async throws(ProviderFailure)
        -> AuthorizationServer
    {
        guard !configuration.redirectURIs.isEmpty else {
            throw ProviderFailure(
                kind: .misconfigured, code: .providerNotConfigured,
                message: "provider '\(configuration.providerName)' has no redirect_uris: it cannot start sign-ins")
        }
        return AuthorizationServer(
            authorizationEndpoint: configuration.authorizationEndpoint, clientID: configuration.clientID,
            redirectURIs: configuration.redirectURIs)
    }

    public func pushAuthorizationRequest(_ parameters: [(name: String, value: String)], over http: ProviderHTTPClient)
        async throws(ProviderFailure) -> PushedAuthorizationRequest
    {
        throw ProviderFailure(
            kind: .misconfigured, code: .providerNotConfigured,
            message: "Sber ID takes no pushed authorization requests")
    }
}
