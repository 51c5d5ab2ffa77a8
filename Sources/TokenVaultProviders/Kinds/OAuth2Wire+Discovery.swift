import Foundation
import TokenVaultCore

/// The endpoints a provider call goes to, and what a sign-in needs of the authorization server.
struct ResolvedEndpoints: Sendable, Equatable {
    var token: String
    var revocation: String?
    var authorization: String? = nil
    var pushedAuthorization: String? = nil
    /// The document's `issuer` (discovery only; a configured one is the configuration's).
    var issuer: String? = nil
    /// `authorization_response_iss_parameter_supported` (RFC 9207 section 3).
    var sendsIssuer = false
}

/// Discovery happens once per provider instance; concurrent first calls share one fetch.
enum DiscoveryState: Sendable {
    case notStarted
    case fetching(Task<ResolvedEndpoints, any Error>)
    case discovered(ResolvedEndpoints)
}

extension OAuth2Wire {
    func resolveEndpoints(over http: ProviderHTTPClient) async throws(ProviderFailure) -> ResolvedEndpoints {
        let url: String
        switch configuration.endpoints {
        case .fixed(let token, let revocation, let authorization, let pushed):
            return ResolvedEndpoints(
                token: token, revocation: revocation, authorization: authorization, pushedAuthorization: pushed,
                issuer: configuration.issuer)
        case .discovery(let discoveryURL): url = discoveryURL
        }
        let next = discovery.withLock { state -> DiscoveryState in
            if case .notStarted = state {
                state = .fetching(Task { try await self.fetchDiscoveryDocument(url, over: http) })
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
        func optionalEndpoint(_ name: String) throws(ProviderFailure) -> String? {
            switch fields[name] {
            case nil, .null?: return nil
            case .string(let text)?:
                return try EndpointURL.validate(text).mapError { broken("\(name): \($0.problem)") }.get().description
            case let other?: throw broken("\(name) is \(other.typeName), not a string")
            }
        }
        var issuer: String?
        switch fields["issuer"] {
        case .string(let text)?: issuer = text
        default: issuer = nil
        }
        if let configured = configuration.issuer, issuer != configured {
            throw broken(
                "its issuer \(issuer.map { "'\($0.prefix(200))'" } ?? "is missing"); the instance's issuer is \(configured)"
            )
        }
        return ResolvedEndpoints(
            token: tokenEndpoint.description, revocation: try optionalEndpoint("revocation_endpoint"),
            authorization: try optionalEndpoint("authorization_endpoint"),
            pushedAuthorization: try optionalEndpoint("pushed_authorization_request_endpoint"), issuer: issuer,
            sendsIssuer: fields["authorization_response_iss_parameter_supported"] == .bool(true))
    }
}
