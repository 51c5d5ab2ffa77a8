/// The revocation endpoint (RFC 7009) and the discovery document (RFC 8414), the two other
/// things a client asks an authorization server.
extension ProviderState {
    /// Revoking a refresh token revokes its family; an access token goes alone; an unknown token
    /// still gets 200 (RFC 7009 2.2). The hint is only a hint: both kinds are looked up.
    mutating func revocationEndpoint(_ request: RecordedRequest) -> HTTPReply {
        if let refusal = precheck(request) { return refusal }
        guard let token = request.form["token"], !token.isEmpty else {
            return error(400, "invalid_request", "token is required")
        }
        ledger.revoke(token)
        switch options.revocationAnswer {
        case .emptyJSON: return .json(200, .object([]))
        case .plainOK: return .text(200, contentType: "text/plain; charset=utf-8", "OK")
        case .empty: return HTTPReply(status: 200, headers: [], body: [])
        }
    }

    func discoveryDocument() -> HTTPReply {
        let authMethod: String
        switch options.clientAuthentication {
        case .basic: authMethod = "client_secret_basic"
        case .post: authMethod = "client_secret_post"
        case .none: authMethod = "none"
        }
        return .json(
            200,
            .object([
                ("issuer", .string(issuer)), ("token_endpoint", .string(issuer + options.tokenPath)),
                ("revocation_endpoint", .string(issuer + options.revocationPath)),
                ("grant_types_supported", .array([.string("authorization_code"), .string("refresh_token")])),
                ("code_challenge_methods_supported", .array([.string("S256")])),
                ("token_endpoint_auth_methods_supported", .array([.string(authMethod)])),
            ]))
    }
}
