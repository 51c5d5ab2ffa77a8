import Foundation
import TokenVaultCore

/// The endpoints a provider call goes to, and what a sign-in needs of the authorization server.
struct ResolvedEndpoints: Sendable, Equatable {
    var token: String
    var revocation: String?
    var authorization: String? = nil
    var pushedAuthorization: String? = nil
    var deviceAuthorization: String? = nil
    /// The document's `issuer` (discovery only; a configured one is the configuration's).
    var issuer: String? = nil
    /// `authorization_response_iss_parameter_supported` (RFC 9207 section 3).
    var sendsIssuer = false
    /// Where the server publishes its signing keys (`jwks_uri`).
    var jwks: String? = nil
    /// The id-token algorithms the server advertises that the vault checks; RS256 (OpenID Connect
    /// Discovery's required one) when it advertises none of them.
    var idTokenAlgorithms: Set<JWSAlgorithm> = [.rs256]
    /// Why sign-ins cannot start although refreshes can (a discovery document whose issuer is
    /// not the one its URL was made from, or whose sign-in endpoints are unusable).
    var signInProblem: String? = nil
}

/// Discovery happens once per provider instance; concurrent first calls share one fetch.
enum DiscoveryState: Sendable {
    case notStarted
    case fetching(Task<ResolvedEndpoints, any Error>)
    case discovered(ResolvedEndpoints)
}

extension OAuth2Wire {
    func resolveEndpoints(over http: ProviderHTTPClient) async throws(ProviderFailure) -> ResolvedEndpoints {
        let urls: [String]
        switch configuration.endpoints {
        case .fixed(let token, let revocation, let authorization, let pushed, let device):
            return ResolvedEndpoints(
                token: token, revocation: revocation, authorization: authorization, pushedAuthorization: pushed,
                deviceAuthorization: device, issuer: configuration.issuer, sendsIssuer: configuration.sendsIssuer,
                jwks: configuration.jwksURI)
        case .discovery(let discoveryURL): urls = [discoveryURL]
        case .issuer(let issuer): urls = Self.metadataURLs(ofIssuer: issuer)
        }
        let next = discovery.withLock { state -> DiscoveryState in
            if case .notStarted = state {
                state = .fetching(Task { try await self.fetchFirstDocument(urls, over: http) })
            }
            return state
        }
        let task: Task<ResolvedEndpoints, any Error>
        switch next {
        case .discovered(let endpoints): return endpoints
        case .fetching(let fetching): task = fetching
        case .notStarted: preconditionFailure("discovery state was just set")
        }
        do {
            let endpoints = try await task.value
            discovery.withLock { $0 = .discovered(endpoints) }
            return endpoints
        } catch {
            discovery.withLock { state in
                if case .fetching = state { state = .notStarted }
            }
            throw error as? ProviderFailure
                ?? ProviderFailure(kind: .transient, code: .discoveryFailed, message: "discovery was interrupted")
        }
    }

    /// The first of `urls` the server answers: a server that does not publish one of them (a 4xx
    /// the vault counts as misconfiguration: 404, 403, …) is asked for the next; one that answers
    /// it is busy or down (429, 5xx, no connection) is not, and the failure says so. The
    /// configured issuer is checked in each.
    private func fetchFirstDocument(_ urls: [String], over http: ProviderHTTPClient) async throws(ProviderFailure)
        -> ResolvedEndpoints
    {
        for (index, url) in urls.enumerated() {
            do {
                return try await fetchDiscoveryDocument(url, over: http)
            } catch let failure
                where index < urls.count - 1 && failure.kind == .misconfigured
                && (400..<500).contains(failure.httpStatus ?? 0)
            {
                continue
            }
        }
        preconditionFailure("no metadata URL to fetch")
    }

    /// Where an issuer's metadata is published: RFC 8414 section 3.1's well-known URL (the suffix
    /// inserted between the host and the issuer's path), then OpenID Connect Discovery section
    /// 4's (appended to the issuer), each without the issuer's terminating `/`.
    public static func metadataURLs(ofIssuer issuer: String) -> [String] {
        let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        var rfc8414 = metadataSuffix
        if let scheme = trimmed.range(of: "://"),
            let pathStart = trimmed[scheme.upperBound...].firstIndex(of: "/")
        {
            rfc8414 = String(trimmed[..<pathStart]) + rfc8414 + String(trimmed[pathStart...])
        } else {
            rfc8414 = trimmed + rfc8414
        }
        return [rfc8414, trimmed + openIDSuffix]
    }

    /// RFC 8414 section 3.1's well-known path and OpenID Connect Discovery section 4's.
    static let metadataSuffix = "/.well-known/oauth-authorization-server"
    static let openIDSuffix = "/.well-known/openid-configuration"

    /// Reads the endpoints (token, revocation, authorization, pushed authorization requests), the
    /// `issuer` and whether the server sends `iss` in its authorization responses from an RFC 8414
    /// / OIDC discovery document. A configured `issuer` must be the document's exactly (RFC 8414
    /// section 3.3: a document naming another issuer may be an attacker's). Fetching it spends nothing, so every transport failure is merely transient.
    private func fetchDiscoveryDocument(_ url: String, over http: ProviderHTTPClient) async throws(ProviderFailure)
        -> ResolvedEndpoints
    {
        func broken(_ problem: String) -> ProviderFailure {
            ProviderFailure(
                kind: .misconfigured, code: .discoveryFailed,
                message: OperatorText.clean("discovery document \(url): \(problem)"))
        }
        let answer: HTTPAnswer
        do {
            answer = try await http.get(url)
        } catch {
            var failure = error
            if failure.kind == .unknownOutcome { failure.kind = .transient }
            failure.message = OperatorText.clean("discovery: \(failure.message)")
            throw failure
        }
        guard (200..<300).contains(answer.status) else {
            var failure = ProviderErrorClassifier.classify(
                status: answer.status, headers: answer.headers, body: answer.body, now: Date())
            failure.message = OperatorText.clean("discovery document \(url): \(failure.message)")
            throw failure
        }
        guard !answer.bodyTooLarge,
            let json = try? JSONDecoder().decode(JSONValue.self, from: Data(answer.body)),
            case .object(let fields) = json
        else { throw broken("not a JSON object") }
        guard case .string(let token)? = fields["token_endpoint"] else { throw broken("no token_endpoint") }
        let tokenEndpoint = try EndpointURL.validate(token).mapError { broken("token_endpoint: \($0.problem)") }.get()
        var revocationEndpoint: String?
        switch fields["revocation_endpoint"] {
        case nil, .null?: revocationEndpoint = nil
        case .string(let text)?:
            revocationEndpoint = try EndpointURL.validate(text)
                .mapError { broken("revocation_endpoint: \($0.problem)") }.get().description
        case let other?: throw broken("revocation_endpoint is \(other.typeName), not a string")
        }
        var endpoints = ResolvedEndpoints(
            token: tokenEndpoint.description, revocation: revocationEndpoint,
            sendsIssuer: configuration.sendsIssuer
                || fields["authorization_response_iss_parameter_supported"] == .bool(true))
        switch fields["jwks_uri"] {
        case nil, .null?: break
        case .string(let text)?:
            endpoints.jwks = try EndpointURL.validate(text).mapError { broken("jwks_uri: \($0.problem)") }.get()
                .description
        case let other?: throw broken("jwks_uri is \(other.typeName), not a string")
        }
        if case .array(let names)? = fields["id_token_signing_alg_values_supported"] {
            let advertised = Set(
                names.compactMap { if case .string(let name) = $0 { JWSAlgorithm(rawValue: name) } else { nil } }
            ).intersection(JWSAlgorithm.publicKey)
            if !advertised.isEmpty { endpoints.idTokenAlgorithms = advertised }
        }
        // What only sign-ins need fails only sign-ins: refreshes go on with a document whose
        // authorization endpoints are unusable.
        for (name, keyPath) in [
            ("authorization_endpoint", \ResolvedEndpoints.authorization),
            ("pushed_authorization_request_endpoint", \ResolvedEndpoints.pushedAuthorization),
            ("device_authorization_endpoint", \ResolvedEndpoints.deviceAuthorization),
        ] {
            guard case .string(let text)? = fields[name] else { continue }
            switch EndpointURL.validate(text) {
            case .success(let endpoint): endpoints[keyPath: keyPath] = endpoint.description
            case .failure(let problem):
                endpoints.signInProblem = "discovery document \(url): \(name): \(problem.problem)"
            }
        }
        let named: String? = if case .string(let text)? = fields["issuer"] { text } else { nil }
        if let configured = configuration.issuer {
            guard named == configured else {
                throw broken(
                    "its issuer \(named.map { "'\($0.prefix(200))'" } ?? "is missing"); the instance's issuer is \(configured)"
                )
            }
            endpoints.issuer = configured
        } else if let expected = Self.issuer(ofDiscoveryURL: url), let named,
            named == expected || named == expected + "/"
        {
            // The well-known suffix is added after a terminating `/` is removed (RFC 8414 section
            // 3.1, OpenID Connect Discovery section 4): the issuer may have had one.
            endpoints.issuer = named
        } else {
            // RFC 8414 section 3.3, OIDC Discovery section 4.3: a document naming another issuer than
            // the one its URL was made from may be an attacker's (a mix-up); it starts no sign-in.
            endpoints.signInProblem = OperatorText.clean(
                "discovery document \(url) names issuer \(named.map { "'\($0.prefix(200))'" } ?? "none"), not the "
                    + "one its URL was made from; configure issuer if the server's is right")
        }
        return endpoints
    }

    /// The issuer a discovery URL was made from (RFC 8414 section 3.1: `/.well-known/oauth-
    /// authorization-server` inserted before the issuer's path; OpenID Connect Discovery section
    /// 4: `/.well-known/openid-configuration` appended to it); nil for any other URL.
    public static func issuer(ofDiscoveryURL url: String) -> String? {
        if url.hasSuffix(openIDSuffix) { return String(url.dropLast(openIDSuffix.count)) }
        guard let range = url.range(of: metadataSuffix) else { return nil }
        return String(url[..<range.lowerBound]) + String(url[range.upperBound...])
    }
}
