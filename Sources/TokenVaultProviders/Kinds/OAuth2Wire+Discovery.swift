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
    /// OpenID Connect's `userinfo_endpoint`, shown to operators (the vault calls it not).
    var userinfo: String? = nil
    /// `token_endpoint_auth_methods_supported`, shown beside the method the instance uses.
    var authenticationMethods: [String] = []
    /// The id-token algorithms the server advertises that the vault checks; RS256 (OpenID Connect
    /// Discovery's required one) when it advertises none of them.
    var idTokenAlgorithms: Set<JWSAlgorithm> = [.rs256]
    /// Why sign-ins cannot start although refreshes can (a discovery document whose issuer is
    /// not the one its URL was made from, or whose sign-in endpoints are unusable).
    var signInProblem: String? = nil
}

/// Discovery happens once per provider instance; concurrent first calls share one fetch. Once
/// read, the document is read again in the background, calls going on with the endpoints in hand:
/// when `readAgainAt` has come (`metadata_refresh_seconds` after a read, sooner after a failed
/// one or when the endpoints came from the kept copy), or `jwks_refetch_seconds` after a call found
/// an endpoint gone (`endpointMoved`).
enum DiscoveryState: Sendable {
    case notStarted
    case fetching(Task<(ResolvedEndpoints, fresh: Bool), any Error>)
    case discovered(ResolvedEndpoints, readAgainAt: Date, reading: Bool)
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
        let now = Date()
        var readAgain = false
        let next = discovery.withLock { state -> DiscoveryState in
            switch state {
            case .notStarted:
                state = .fetching(Task { try await self.discover(urls, over: http) })
            case .discovered(let endpoints, let due, false) where due <= now:
                state = .discovered(endpoints, readAgainAt: due, reading: true)
                readAgain = true
            default: break
            }
            return state
        }
        if readAgain { Task { await self.readAgain(urls, over: http) } }
        let task: Task<(ResolvedEndpoints, fresh: Bool), any Error>
        switch next {
        case .discovered(let endpoints, _, _): return endpoints
        case .fetching(let fetching): task = fetching
        case .notStarted: preconditionFailure("discovery state was just set")
        }
        do {
            let (endpoints, fresh) = try await task.value
            discovery.withLock { state in
                if case .fetching = state {
                    state = .discovered(endpoints, readAgainAt: readAgainAt(fresh: fresh), reading: false)
                }
            }
            return endpoints
        } catch {
            discovery.withLock { state in
                if case .fetching = state { state = .notStarted }
            }
            throw error as? ProviderFailure
                ?? ProviderFailure(kind: .transient, code: .discoveryFailed, message: "discovery was interrupted")
        }
    }

    /// The server's metadata, read now and kept in the store; when it cannot be read, the copy
    /// kept for this instance from the same source, checked as a fresh one is (`fresh` false).
    private func discover(_ urls: [String], over http: ProviderHTTPClient) async throws(ProviderFailure) -> (
        ResolvedEndpoints, fresh: Bool
    ) {
        do {
            return (try await readAndKeep(urls, over: http), true)
        } catch {
            guard let kept = await services?.metadata?.keptMetadata(of: configuration.providerName),
                kept.source == Self.keptSource(urls), urls.contains(kept.url),
                let endpoints = try? readDocument(Array(kept.document.utf8), from: kept.url)
            else { throw error }
            http.logger.warning(
                "the server's metadata cannot be read; using the copy kept from an earlier read",
                metadata: [
                    "tokenvault.provider": "\(configuration.providerName)",
                    "tokenvault.detail": "\(error.message)",
                    "tokenvault.provider.metadata_read_at": "\(Timestamp(seconds: kept.readAt))",
                ])
            return (endpoints, false)
        }
    }

    /// Reads the metadata again for endpoints in use: the new ones replace them, and a failure
    /// leaves them as they are until the next try.
    private func readAgain(_ urls: [String], over http: ProviderHTTPClient) async {
        let read: ResolvedEndpoints?
        do {
            read = try await readAndKeep(urls, over: http)
        } catch {
            read = nil
            http.logger.notice(
                "the server's metadata could not be read again; the endpoints in use are kept",
                metadata: [
                    "tokenvault.provider": "\(configuration.providerName)", "tokenvault.detail": "\(error.message)",
                ])
        }
        discovery.withLock { state in
            guard case .discovered(let endpoints, _, _) = state else { return }
            state = .discovered(read ?? endpoints, readAgainAt: readAgainAt(fresh: read != nil), reading: false)
        }
    }

    /// Marks the endpoints in use as possibly outdated: a call to one of them was answered 404 or
    /// 410, so a call `jwks_refetch_seconds` later reads the metadata again (in the background).
    /// Not sooner, and not once per such answer: a server that answers 404 for one token must not
    /// make every call read (and keep) its metadata.
    func endpointMoved() {
        let soon = Date().addingTimeInterval(
            max(1, min(configuration.jwksRefetchSeconds, configuration.metadataRefreshSeconds)))
        discovery.withLock { state in
            if case .discovered(let endpoints, let due, let reading) = state, due > soon {
                state = .discovered(endpoints, readAgainAt: soon, reading: reading)
            }
        }
    }

    /// When to read the metadata again: a full period after a successful read, at most five
    /// minutes after a failed one.
    private func readAgainAt(fresh: Bool) -> Date {
        let period = configuration.metadataRefreshSeconds
        return Date().addingTimeInterval(fresh ? period : min(period, 300))
    }

    /// What a kept copy says it was read from: only an instance reading the same URLs uses it.
    static func keptSource(_ urls: [String]) -> String { urls.joined(separator: " ") }

    /// `fetchFirstDocument`, and the document kept in the store (a failure to keep it is the
    /// store's to log).
    private func readAndKeep(_ urls: [String], over http: ProviderHTTPClient) async throws(ProviderFailure)
        -> ResolvedEndpoints
    {
        let (endpoints, url, body) = try await fetchFirstDocument(urls, over: http)
        await services?.metadata?.keep(
            KeptProviderMetadata(
                source: Self.keptSource(urls), url: url, readAt: Date().timeIntervalSince1970,
                document: String(decoding: body, as: UTF8.self)),
            of: configuration.providerName)
        return endpoints
    }

    /// The first of `urls` the server answers: a server that does not publish one of them (a 4xx
    /// the vault counts as misconfiguration: 404, 403, …) is asked for the next; one that answers
    /// it is busy or down (429, 5xx, no connection) is not, and the failure says so. The
    /// configured issuer is checked in each.
    private func fetchFirstDocument(_ urls: [String], over http: ProviderHTTPClient) async throws(ProviderFailure)
        -> (ResolvedEndpoints, url: String, body: [UInt8])
    {
        for (index, url) in urls.enumerated() {
            do {
                let body = try await fetchDiscoveryDocument(url, over: http)
                return (try readDocument(body, from: url), url, body)
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

    /// The body of the metadata document at `url`. Fetching it spends nothing, so every transport
    /// failure is merely transient.
    private func fetchDiscoveryDocument(_ url: String, over http: ProviderHTTPClient) async throws(ProviderFailure)
        -> [UInt8]
    {
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
        guard !answer.bodyTooLarge else {
            throw ProviderFailure(
                kind: .misconfigured, code: .discoveryFailed,
                message: OperatorText.clean(
                    "discovery document \(url): larger than \(HTTPAnswer.maximumBodySize) bytes"))
        }
        return answer.body
    }

    /// Reads the endpoints (token, revocation, authorization, pushed authorization requests, JWKS),
    /// the `issuer` and whether the server sends `iss` in its authorization responses from an RFC
    /// 8414 / OIDC discovery document read from `url`. A configured `issuer` must be the
    /// document's exactly (RFC 8414 section 3.3: a document naming another issuer may be an
    /// attacker's).
    private func readDocument(_ body: [UInt8], from url: String) throws(ProviderFailure) -> ResolvedEndpoints {
        func broken(_ problem: String) -> ProviderFailure {
            ProviderFailure(
                kind: .misconfigured, code: .discoveryFailed,
                message: OperatorText.clean("discovery document \(url): \(problem)"))
        }
        guard let json = try? JSONDecoder().decode(JSONValue.self, from: Data(body)),
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
        if case .string(let text)? = fields["userinfo_endpoint"], case .success(let url) = EndpointURL.validate(text) {
            endpoints.userinfo = url.description
        }
        if case .array(let names)? = fields["token_endpoint_auth_methods_supported"] {
            endpoints.authenticationMethods = names.compactMap { if case .string(let name) = $0 { name } else { nil } }
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
