/// The parameters of an authorization request the vault starts (RFC 6749 section 4.1.1 with
/// PKCE S256, RFC 7636; OpenID Connect's `nonce`; RFC 8707 `resource`), and the URL a browser
/// is sent to. Pure: the secrets come in.
public struct AuthorizationRequest: Sendable {
    public var clientID: String
    public var redirectURI: String
    public var scopes: [String]
    /// The state as sent (base64url text of random bytes); never stored.
    public var state: String
    /// `BASE64URL(SHA256(verifier))`.
    public var codeChallenge: String
    public var nonce: String?
    public var loginHint: String?
    public var prompt: String?
    public var resources: [String]
    /// Extra parameters the instance allows (`authorization_parameters`), in name order.
    public var extra: [String: String]

    public init(
        clientID: String, redirectURI: String, scopes: [String], state: String, codeChallenge: String, nonce: String?,
        loginHint: String? = nil, prompt: String? = nil, resources: [String] = [], extra: [String: String] = [:]
    ) {
        self.clientID = clientID
        self.redirectURI = redirectURI
        self.scopes = scopes
        self.state = state
        self.codeChallenge = codeChallenge
        self.nonce = nonce
        self.loginHint = loginHint
        self.prompt = prompt
        self.resources = resources
        self.extra = extra
    }

    /// Names the vault sets itself: a caller's extra parameters may not.
    public static let reservedNames: Set<String> = [
        "response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method",
        "nonce", "login_hint", "prompt", "resource", "request", "request_uri", "response_mode",
        "client_secret", "client_assertion", "client_assertion_type",
    ]

    /// Every parameter, in a fixed order.
    public var parameters: [(name: String, value: String)] {
        var parameters: [(name: String, value: String)] = [
            ("response_type", "code"), ("client_id", clientID), ("redirect_uri", redirectURI),
        ]
        if !scopes.isEmpty { parameters.append(("scope", scopes.joined(separator: " "))) }
        parameters += [("state", state), ("code_challenge", codeChallenge), ("code_challenge_method", "S256")]
        if let nonce { parameters.append(("nonce", nonce)) }
        if let loginHint { parameters.append(("login_hint", loginHint)) }
        if let prompt { parameters.append(("prompt", prompt)) }
        parameters += resources.map { ("resource", $0) }
        parameters += extra.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return parameters
    }

    /// The URL with every parameter in its query.
    public func url(endpoint: String) -> String {
        Self.url(endpoint, FormEncoding.encode(parameters))
    }

    /// The URL of a pushed request (RFC 9126 section 4): `client_id` and `request_uri` only.
    public func url(endpoint: String, pushed: PushedAuthorizationRequest) -> String {
        Self.url(endpoint, FormEncoding.encode([("client_id", clientID), ("request_uri", pushed.requestURI)]))
    }

    /// An endpoint may carry a query of its own (RFC 6749 section 3.1): ours is appended to it.
    private static func url(_ endpoint: String, _ query: String) -> String {
        endpoint + (endpoint.contains("?") ? "&" : "?") + query
    }

    /// Whether `scopes` ask for an id token (OpenID Connect), which is then bound by a nonce.
    public static func asksForIDToken(_ scopes: [String]) -> Bool { scopes.contains("openid") }
}
