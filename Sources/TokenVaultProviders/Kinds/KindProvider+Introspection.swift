import TokenVaultCore

/// `tokenvault providers show` and `jwks` of an `oauth2` instance: what it found in the server's
/// metadata (or was given), how it authenticates, and its client key's public half.
extension KindProvider: ProviderIntrospection where Wire == OAuth2Wire {
    public func details() async throws(ProviderFailure) -> [String: JSONValue] {
        let configuration = wire.configuration
        let endpoints = try await wire.resolveEndpoints(over: http)
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        let source: String
        switch configuration.endpoints {
        case .fixed: source = "configured"
        case .discovery(let url): source = url
        case .issuer(let issuer): source = OAuth2Wire.metadataURLs(ofIssuer: issuer).joined(separator: " then ")
        }
        let signature: JSONValue
        let algorithms: [JWSAlgorithm]
        var problem = endpoints.signInProblem
        switch wire.idTokenRule(endpoints) {
        case .tls: (signature, algorithms) = (.string("tls"), [])
        case .jwks(_, let rules): (signature, algorithms) = (.string("jwks"), rules.algorithms.sorted())
        case .missing(let why):
            (signature, algorithms) = (.string("jwks"), [])
            problem = "every id token is refused: " + why
        }
        return [
            "name": .string(name), "kind": .string(OAuth2Wire.kind), "metadata_source": .string(source),
            "issuer": text(endpoints.issuer), "token_endpoint": .string(endpoints.token),
            "revocation_endpoint": text(endpoints.revocation),
            "authorization_endpoint": text(endpoints.authorization),
            "pushed_authorization_request_endpoint": text(endpoints.pushedAuthorization),
            "device_authorization_endpoint": text(endpoints.deviceAuthorization), "jwks_uri": text(endpoints.jwks),
            "userinfo_endpoint": text(endpoints.userinfo),
            "token_endpoint_auth_methods_supported": .array(endpoints.authenticationMethods.map(JSONValue.string)),
            "authorization_response_iss_parameter_supported": .bool(endpoints.sendsIssuer),
            "client_id": .string(configuration.clientID),
            "client_authentication": .string(configuration.clientAuthentication.rawValue),
            "id_token_signature": signature,
            "id_token_signing_algorithms": .array(algorithms.map { .string($0.rawValue) }),
            "sign_in_problem": text(problem),
        ]
    }

    public func clientKeySet() throws -> JSONValue? {
        guard let services = wire.services else { return nil }
        return .object(["keys": .array([.object(try services.clientKey(for: name).publicJWK)])])
    }
}
