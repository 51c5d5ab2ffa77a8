import NIOHTTP1
import TokenVaultCore

/// What one provider kind writes: the token requests (refresh, code exchange) and revocation
/// request it sends, from its configuration. Everything else is written once, in `KindProvider`:
/// the instance name, the HTTP client over the instance's transport, sending and reading
/// (`ProviderHTTPClient`), the failure log, shutdown.
public protocol ProviderWire: Sendable {
    associatedtype Configuration: KindConfiguration

    /// The kind's name (`tinkoff-id`), for messages.
    static var kind: String { get }

    var configuration: Configuration { get }
    init(configuration: Configuration)
    /// With what the instance signs and verifies with (client assertions, id-token signatures);
    /// a kind that signs nothing ignores it.
    init(configuration: Configuration, services: ProviderServices?)

    var supportsRevocation: Bool { get }

    /// The token request of a refresh. `http` is the instance's client, for a kind that must ask
    /// something first (OAuth2's discovery document).
    func refreshCall(_ request: RefreshRequest, over http: ProviderHTTPClient) async throws(ProviderFailure)
        -> TokenCall
    /// The token request of a code exchange.
    func exchangeCall(_ request: CodeExchangeRequest, over http: ProviderHTTPClient) async throws(ProviderFailure)
        -> TokenCall
    /// The RFC 7009 request revoking `token`; nil for a kind without a revocation endpoint.
    func revocationCall(_ token: SecretBytes, hint: TokenHint, over http: ProviderHTTPClient)
        async throws(ProviderFailure) -> RevocationCall?
    /// Checks a token answer beyond its form (`vet` in the extension: nothing by default).
    func vet(_ payload: inout TokenPayload, over http: ProviderHTTPClient) async
    /// Hears every failed call (`noteFailure` in the extension: nothing by default).
    func noteFailure(_ failure: ProviderFailure)
    /// The RFC 8693 token request deriving a token from `subjectToken`; nil for a kind without
    /// token exchange (the extension's default).
    func tokenExchangeCall(_ request: TokenExchangeRequest, subjectToken: SecretBytes, over http: ProviderHTTPClient)
        async throws(ProviderFailure) -> TokenCall?
    /// The token request of a credential's own grant (client credentials); nil for a kind without
    /// one (the extension's default).
    func grantCall(_ request: GrantRequest, over http: ProviderHTTPClient) async throws(ProviderFailure) -> TokenCall?
}

extension ProviderWire {
    public init(configuration: Configuration, services: ProviderServices?) { self.init(configuration: configuration) }

    /// Checks a token answer beyond its form before it is returned (an `oauth2` instance's id-token
    /// signature); a kind without such a check leaves it as it is.
    public func vet(_ payload: inout TokenPayload, over http: ProviderHTTPClient) async {}

    /// What a failed call says about the instance beyond itself (an `oauth2` endpoint gone:
    /// its metadata is read again); nothing by default.
    public func noteFailure(_ failure: ProviderFailure) {}

    public func tokenExchangeCall(
        _ request: TokenExchangeRequest, subjectToken: SecretBytes, over http: ProviderHTTPClient
    ) async throws(ProviderFailure) -> TokenCall? { nil }

    public func grantCall(_ request: GrantRequest, over http: ProviderHTTPClient) async throws(ProviderFailure)
        -> TokenCall?
    { nil }
}

/// An RFC 7009 revocation request as a kind builds it.
public struct RevocationCall: Sendable {
    var url: String
    var form: FormBody
    var headers: HTTPHeaders
    /// What must never show in a message (the token, the client secret).
    var secrets: [SecretBytes]
}
