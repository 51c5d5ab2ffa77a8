/// `GET /v1/admin/providers/{provider}`: a provider instance as the daemon uses it. Beyond `name`
/// and `kind`, only an `oauth2` instance says more: what it found in the server's metadata (or
/// was given), and how it authenticates and checks id tokens.
public struct ProviderDetails: Codable, Sendable, Equatable {
    public var name: String
    public var kind: String
    /// `configured`, or the metadata URL(s) the endpoints came from.
    public var metadataSource: String?
    public var issuer: String?
    public var tokenEndpoint: String?
    public var revocationEndpoint: String?
    public var authorizationEndpoint: String?
    public var pushedAuthorizationRequestEndpoint: String?
    public var deviceAuthorizationEndpoint: String?
    public var jwksURI: String?
    public var userinfoEndpoint: String?
    /// What the server's metadata says it accepts (empty when it says nothing).
    public var tokenEndpointAuthMethodsSupported: [String]?
    public var clientID: String?
    /// `client_secret_basic`, `private_key_jwt`, `tls_client_auth`, …
    public var clientAuthentication: String?
    /// `jwks` (checked by signature) or `tls` (trusted from the token endpoint's TLS).
    public var idTokenSignature: String?
    public var idTokenSigningAlgorithms: [String]?
    /// Why sign-ins cannot start although refreshes can, if so.
    public var signInProblem: String?

    /// A JWK Set of the vault's client keys (P-256 keys: `kty` `EC`).
    public struct KeySet: Codable, Sendable, Equatable {
        public var keys: [Key]
    }

    public struct Key: Codable, Sendable, Equatable {
        public var kty: String
        public var crv: String?
        public var x: String?
        public var y: String?
        public var kid: String?
        public var alg: String?
        public var use: String?
    }

    enum CodingKeys: String, CodingKey {
        case name, kind, issuer
        case metadataSource = "metadata_source"
        case tokenEndpoint = "token_endpoint"
        case revocationEndpoint = "revocation_endpoint"
        case authorizationEndpoint = "authorization_endpoint"
        case pushedAuthorizationRequestEndpoint = "pushed_authorization_request_endpoint"
        case deviceAuthorizationEndpoint = "device_authorization_endpoint"
        case jwksURI = "jwks_uri"
        case userinfoEndpoint = "userinfo_endpoint"
        case tokenEndpointAuthMethodsSupported = "token_endpoint_auth_methods_supported"
        case clientID = "client_id"
        case clientAuthentication = "client_authentication"
        case idTokenSignature = "id_token_signature"
        case idTokenSigningAlgorithms = "id_token_signing_algorithms"
        case signInProblem = "sign_in_problem"
    }
}
