import Foundation
import TokenVaultCore

/// The endpoints a provider call goes to.
struct ResolvedEndpoints: Sendable, Equatable {
    var token: String
    var revocation: String?
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
        case .fixed(let token, let revocation): return ResolvedEndpoints(token: token, revocation: revocation)
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

    /// Reads `token_endpoint` and `revocation_endpoint` from an RFC 8414 / OIDC discovery
    /// document. Fetching it spends nothing, so every transport failure is merely transient.
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
        var revocationEndpoint: EndpointURL?
        switch fields["revocation_endpoint"] {
        case nil, .null?: revocationEndpoint = nil
        case .string(let revocation)?:
            revocationEndpoint = try EndpointURL.validate(revocation)
                .mapError { broken("revocation_endpoint: \($0.problem)") }.get()
        case let other?: throw broken("revocation_endpoint is \(other.typeName), not a string")
        }
        return ResolvedEndpoints(token: tokenEndpoint.description, revocation: revocationEndpoint?.description)
    }
}
