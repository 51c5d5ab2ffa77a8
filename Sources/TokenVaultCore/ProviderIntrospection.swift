/// What an operator may see of a provider instance, all of it public: where its endpoints are
/// and what its server advertises (read now if it was not yet), how it authenticates and checks
/// id tokens, and the public keys of its client assertions, to register at the server.
public protocol ProviderIntrospection: Sendable {
    /// Members named as in RFC 8414 where RFC 8414 names them.
    func details() async throws(ProviderFailure) -> [String: JSONValue]
    /// The JWK Set of the instance's client key (`private_key_jwt`); nil when it cannot sign.
    func clientKeySet() throws -> JSONValue?
}
