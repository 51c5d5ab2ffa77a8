import Foundation
import TokenVaultCore

/// The options of an `oauth2` provider instance, validated. Every problem is reported with its
/// full key (`providers.<name>.<option>`) when the daemon starts, not at the first refresh.
///
/// Secrets never come from the configuration text: a config file is read by people, copied
/// into tickets and committed to repositories. The client secret comes from a private file or
/// a systemd credential.
public struct OAuth2Configuration: KindConfiguration {
    /// Where the endpoints come from.
    public enum Endpoints: Sendable, Equatable {
        case fixed(
            token: String, revocation: String?, authorization: String?, pushedAuthorization: String?,
            deviceAuthorization: String? = nil)
        /// Fetched on first use and cached (RFC 8414 / OpenID Connect Discovery).
        case discovery(String)
        /// The server's metadata found from its issuer alone, fetched on first use and cached:
        /// RFC 8414's well-known URL first, then OpenID Connect Discovery's.
        case issuer(String)
    }

    public static let knownOptions: Set<String> = [
        "token_endpoint", "revocation_endpoint", "discovery_url", "client_id", "client_secret_file",
        "client_secret_credential", "client_authentication", "headers", "ca_file", "trust_system_roots", "send_scope",
        "authorization_endpoint", "pushed_authorization_request_endpoint", "issuer", "redirect_uris",
        "authorization_parameters", "authorization_response_iss_parameter_supported",
        "device_authorization_endpoint", "jwks_uri", "id_token_signature", "id_token_signing_algorithms",
        "jwks_refetch_seconds", "client_certificate_file", "client_certificate_password_file",
        "metadata_refresh_seconds", "client_credentials",
    ]

    /// How the id tokens of token answers are checked.
    public enum IDTokenSignature: String, Sendable, Equatable, CaseIterable {
        /// By signature, with the issuer's published keys (`IDTokenVerifier`).
        case jwks
        /// Not by signature: the token came straight from the token endpoint over TLS (OpenID
        /// Connect Core section 3.1.3.7 allows this for the code flow). For servers that sign
        /// with keys the vault cannot check (GOST).
        case tls
    }
    /// Headers TokenVault sets itself; letting the config override them would break requests or
    /// smuggle credentials around `client_authentication`.
    static let reservedHeaders: Set<String> = [
        "authorization", "content-type", "content-length", "host", "transfer-encoding", "connection",
    ]

    public let providerName: String
    public let endpoints: Endpoints
    public let clientID: String
    public let clientAuthentication: ClientAuthentication
    /// Extra request headers, in the order given (names as written).
    public let headers: [(name: String, value: String)]
    public let sendScope: Bool
    /// The authorization server's issuer identifier: a sign-in's callback `iss` (RFC 9207) and
    /// its id token's `iss` must equal it, and so must a discovered document's `issuer`. Given
    /// alone, it is where the endpoints are found (`Endpoints.issuer`).
    public let issuer: String?
    /// Where sign-ins may send the person back to (`RedirectURIRule`); empty: the instance
    /// cannot start sign-ins.
    public let redirectURIs: [String]
    /// Extra authorization parameters a caller may add to a sign-in (`acr_values`, `ui_locales`…).
    public let authorizationParameters: Set<String>
    /// The server sends `iss` with every authorization response (RFC 9207): a callback without
    /// it is refused. Also read from the discovery document.
    public let sendsIssuer: Bool
    /// Connections open at once, from the instance's `limits.concurrency`, so the engine's
    /// limit, not the HTTP client's default pool of 8, decides how many calls run together.
    /// Timeouts and CA file (`OptionReader.transportSettings`).
    public let httpSettings: TransportSettings
    /// `id_token_signature`; nil: `jwks` where a JWKS is known, `tls` where none is.
    public let idTokenSignature: IDTokenSignature?
    /// `id_token_signing_algorithms`; nil: those the server advertises among
    /// `JWSAlgorithm.publicKey`, or RS256 (OpenID Connect's default) if it advertises none.
    public let idTokenAlgorithms: Set<JWSAlgorithm>?
    /// `jwks_uri`, with configured endpoints (discovery supplies its own).
    public let jwksURI: String?
    /// How soon a token signed with a key the cached JWKS lacks may fetch it again.
    public let jwksRefetchSeconds: Double
    /// How long discovered metadata is used before it is read again (in the background).
    public let metadataRefreshSeconds: Double
    /// What credentials may ask for by the client credentials grant; nil: the grant is off.
    public let clientCredentials: ClientCredentialsPolicy?
    /// From `client_secret_file` or `client_secret_credential`.
    let clientSecret: SecretBytes?
    public var hasClientSecret: Bool { clientSecret != nil }

    public init(_ settings: ProviderSettings, environment: [String: String]) throws(ProviderConfigurationError) {
        let reader = try OptionReader.checked(settings, for: Self.self)
        let fail = reader.fail
        providerName = settings.name

        let tokenEndpoint = try reader.endpoint("token_endpoint")
        let revocationEndpoint = try reader.endpoint("revocation_endpoint")
        let discoveryURL = try reader.endpoint("discovery_url")
        let authorizationEndpoint = try reader.endpoint("authorization_endpoint")
        let pushedEndpoint = try reader.endpoint("pushed_authorization_request_endpoint")
        let deviceEndpoint = try reader.endpoint("device_authorization_endpoint")
        let jwksEndpoint = try reader.endpoint("jwks_uri")
        jwksURI = jwksEndpoint?.description
        issuer = try reader.string("issuer")
        if let issuer {
            guard case .success(let url) = EndpointURL.validate(issuer), url.url.query == nil else {
                throw fail("issuer", "must be an https URL without a query or fragment (RFC 8414 section 2)")
            }
        }
        let discovered = [
            ("revocation_endpoint", revocationEndpoint), ("authorization_endpoint", authorizationEndpoint),
            ("pushed_authorization_request_endpoint", pushedEndpoint),
            ("device_authorization_endpoint", deviceEndpoint), ("jwks_uri", jwksEndpoint),
        ]
        switch (tokenEndpoint, discoveryURL) {
        case (let token?, nil):
            endpoints = .fixed(
                token: token.description, revocation: revocationEndpoint?.description,
                authorization: authorizationEndpoint?.description, pushedAuthorization: pushedEndpoint?.description,
                deviceAuthorization: deviceEndpoint?.description)
        case (nil, let discovery?):
            for (key, value) in discovered where value != nil {
                throw fail(key, "give it only with token_endpoint; discovery_url supplies the endpoints")
            }
            endpoints = .discovery(discovery.description)
        case (_?, _?):
            throw fail("discovery_url", "give either token_endpoint or discovery_url, not both")
        case (nil, nil):
            guard let issuer else {
                throw fail(
                    "token_endpoint",
                    "required (or issuer, or discovery_url); to store credentials without refreshing them, give the "
                        + "provider no options")
            }
            for (key, value) in discovered where value != nil {
                throw fail(key, "give it only with token_endpoint; the issuer's metadata supplies the endpoints")
            }
            endpoints = .issuer(issuer)
        }

        clientID = try reader.requiredString("client_id", why: "required when the provider has an endpoint")
        clientSecret = try reader.clientSecret(environment: environment)

        if let method = try reader.string("client_authentication") {
            guard let parsed = ClientAuthentication(rawValue: method) else {
                throw fail(
                    "client_authentication",
                    "'\(method.prefix(64))' is not one of \(ClientAuthentication.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            clientAuthentication = parsed
        } else {
            clientAuthentication = clientSecret == nil ? .none : .clientSecretBasic
        }
        httpSettings = try reader.transportSettings(settings.limits)
        switch clientAuthentication {
        case .clientSecretJWT where clientSecret == nil:
            throw fail(
                "client_authentication", "client_secret_jwt needs client_secret_file or client_secret_credential")
        case .privateKeyJWT, .tlsClientAuth, .selfSignedTLSClientAuth:
            if clientSecret != nil {
                throw fail(
                    "client_authentication",
                    "is \(clientAuthentication.rawValue), so the configured client secret would never be sent; "
                        + "remove one")
            }
            if clientAuthentication != .privateKeyJWT, httpSettings.clientIdentity == nil {
                throw fail(
                    "client_authentication",
                    "\(clientAuthentication.rawValue) needs client_certificate_file (RFC 8705: the client "
                        + "authenticates with its TLS certificate)")
            }
        default: break
        }
        idTokenSignature = try reader.string("id_token_signature").map { (rule) throws(ProviderConfigurationError) in
            guard let parsed = IDTokenSignature(rawValue: rule) else {
                throw fail("id_token_signature", "'\(rule.prefix(32))' is not jwks or tls")
            }
            return parsed
        }
        idTokenAlgorithms = try reader.stringArray("id_token_signing_algorithms").map {
            (names) throws(ProviderConfigurationError) in
            let allowed = JWSAlgorithm.publicKey.sorted().map(\.rawValue).joined(separator: ", ")
            var algorithms: Set<JWSAlgorithm> = []
            for name in names {
                guard let algorithm = JWSAlgorithm(rawValue: name), JWSAlgorithm.publicKey.contains(algorithm) else {
                    throw fail(
                        "id_token_signing_algorithms",
                        "'\(name.prefix(32))' is not one of \(allowed) (never none, never an HMAC algorithm)")
                }
                algorithms.insert(algorithm)
            }
            guard !algorithms.isEmpty else { throw fail("id_token_signing_algorithms", "must name at least one") }
            return algorithms
        }
        jwksRefetchSeconds = try reader.number("jwks_refetch_seconds", in: 0...86_400) ?? 60
        metadataRefreshSeconds = try reader.number("metadata_refresh_seconds", in: 1...2_592_000) ?? 86_400
        if jwksURI != nil, issuer == nil {
            throw fail("jwks_uri", "needs issuer: an id token's iss is checked against it")
        }
        if idTokenSignature == .jwks, case .fixed = endpoints, jwksURI == nil || issuer == nil {
            throw fail(
                "id_token_signature",
                "jwks needs jwks_uri and issuer with a configured token_endpoint (discovery supplies both)")
        }
        if clientAuthentication == .clientSecretPost, clientSecret == nil {
            throw fail(
                "client_authentication", "client_secret_post needs client_secret_file or client_secret_credential")
        }
        clientCredentials = try reader.clientCredentialsPolicy()
        if clientCredentials != nil, clientAuthentication == .none {
            throw fail(
                "client_credentials",
                "a client credentials grant needs the client to authenticate; client_authentication is none")
        }
        if clientAuthentication == .none, clientSecret != nil {
            throw fail(
                "client_authentication", "is none, so the configured client secret would never be sent; remove one")
        }

        headers = try reader.headers("headers")
        sendScope = try reader.bool("send_scope") ?? false
        redirectURIs = try reader.redirectURIs()
        if authorizationEndpoint == nil, pushedEndpoint != nil {
            throw fail("pushed_authorization_request_endpoint", "needs authorization_endpoint too")
        }
        authorizationParameters = Set(try reader.stringArray("authorization_parameters") ?? [])
        sendsIssuer = try reader.bool("authorization_response_iss_parameter_supported") ?? false
        for name in authorizationParameters where AuthorizationRequest.reservedNames.contains(name) {
            throw fail("authorization_parameters", "\(name) is set by the vault itself")
        }
    }
}

/// Configured extra headers, an `oauth2` feature (other kinds send fixed headers of their own).
extension OptionReader {
    func headers(_ key: String) throws(ProviderConfigurationError) -> [(name: String, value: String)] {
        switch options[key] {
        case nil, .null?: return []
        case .object(let fields)?:
            return try fields.sorted(by: { $0.key < $1.key }).map { (name, value) throws(ProviderConfigurationError) in
                guard HTTPToken.isToken(name) else { throw fail("\(key).\(name)", "is not a valid header name") }
                guard !OAuth2Configuration.reservedHeaders.contains(name.lowercased()) else {
                    throw fail("\(key).\(name)", "is set by TokenVault itself (see client_authentication)")
                }
                guard case .string(let text) = value else {
                    throw fail("\(key).\(name)", "expected a string, got \(value.typeName)")
                }
                guard !text.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
                    throw fail("\(key).\(name)", "must not contain line breaks")
                }
                return (name, text)
            }
        case let other?: throw fail(key, "expected an object of header names to values, got \(other.typeName)")
        }
    }
}
