/// A provider instance that can start sign-ins: it knows its authorization server. Implemented
/// by the kinds whose servers take a browser's authorization request (`oauth2`).
public protocol SignInProvider: TokenProvider {
    /// The authorization server as configured or discovered.
    func authorizationServer() async throws(ProviderFailure) -> AuthorizationServer
    /// Pushes an authorization request's parameters (RFC 9126), client authentication added;
    /// answers the `request_uri` the authorization URL then carries.
    func pushAuthorizationRequest(_ parameters: [(name: String, value: String)]) async throws(ProviderFailure)
        -> PushedAuthorizationRequest
    /// Asks the device authorization endpoint for a device code and a user code (RFC 8628
    /// section 3.1), client authentication added.
    func requestDeviceAuthorization(scopes: [String], extra: [String: String]) async throws(ProviderFailure)
        -> DeviceAuthorization
}

/// What starting a sign-in at a provider instance needs to know.
public struct AuthorizationServer: Sendable, Equatable {
    public var authorizationEndpoint: String
    /// RFC 9126: when set, every authorization request is pushed there first.
    public var pushedAuthorizationRequestEndpoint: String?
    /// The server's issuer identifier: the callback's `iss` (RFC 9207) and the id token's `iss`
    /// must equal it. Nil when neither configured nor discovered.
    public var issuer: String?
    /// The server says it sends `iss` with every authorization response
    /// (`authorization_response_iss_parameter_supported`): a callback without it is refused.
    public var sendsIssuer: Bool
    public var clientID: String
    /// The instance's `redirect_uris`: a sign-in's redirect URI must be one of them
    /// (`RedirectURIRule`).
    public var redirectURIs: [String]
    /// Names of extra authorization parameters a caller may add (`authorization_parameters`).
    public var extraParameters: Set<String>

    public init(
        authorizationEndpoint: String, pushedAuthorizationRequestEndpoint: String? = nil, issuer: String? = nil,
        sendsIssuer: Bool = false, clientID: String, redirectURIs: [String], extraParameters: Set<String> = []
    ) {
        self.authorizationEndpoint = authorizationEndpoint
        self.pushedAuthorizationRequestEndpoint = pushedAuthorizationRequestEndpoint
        self.issuer = issuer
        self.sendsIssuer = sendsIssuer
        self.clientID = clientID
        self.redirectURIs = redirectURIs
        self.extraParameters = extraParameters
    }
}

/// A pushed authorization request's answer (RFC 9126 section 2.2).
public struct PushedAuthorizationRequest: Sendable, Equatable {
    public var requestURI: String
    public var expiresIn: Double

    public init(requestURI: String, expiresIn: Double) {
        self.requestURI = requestURI
        self.expiresIn = expiresIn
    }
}
