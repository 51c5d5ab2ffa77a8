import TokenVaultCore

/// What an `oauth2` instance lets credentials ask for by its client credentials grant (its
/// `client_credentials` option). A grant's tokens are the client's own, which no caller could get
/// before, so the grant is off unless the operator lists what may be asked: a put or a renewal
/// asking for a scope, audience or resource not listed is refused before anything is sent.
public struct ClientCredentialsPolicy: Sendable, Equatable {
    public let scopes: Set<String>
    public let audiences: Set<String>
    public let resources: Set<String>

    public init(scopes: Set<String> = [], audiences: Set<String> = [], resources: Set<String> = []) {
        self.scopes = scopes
        self.audiences = audiences
        self.resources = resources
    }

    /// Why `grant` is refused, naming the first value not listed; nil when it may be asked.
    public func refusal(of grant: CredentialGrant) -> String? {
        for (asked, allowed, noun, option) in [
            (grant.scopes, scopes, "scope", "scopes"), (grant.audiences, audiences, "audience", "audience"),
            (grant.resources, resources, "resource", "resource"),
        ] {
            if let value = asked.sorted().first(where: { !allowed.contains($0) }) {
                return "\(noun) '\(value.prefix(128))' is not in the instance's client_credentials.\(option)"
            }
        }
        return nil
    }
}

extension OptionReader {
    /// `client_credentials`: an object of `scopes`, `audience` and `resource` lists (each may be
    /// absent: nothing of that kind may be asked); nil when the option is absent.
    func clientCredentialsPolicy() throws(ProviderConfigurationError) -> ClientCredentialsPolicy? {
        let key = "client_credentials"
        switch options[key] {
        case nil, .null?: return nil
        case .object(let fields)?:
            if let unknown = fields.keys.filter({ !["scopes", "audience", "resource"].contains($0) }).sorted().first {
                throw fail("\(key).\(unknown)", "unknown option (known: audience, resource, scopes)")
            }
            func list(_ name: String) throws(ProviderConfigurationError) -> Set<String> {
                switch fields[name] {
                case nil, .null?: return []
                case .array(let items)?:
                    var values: Set<String> = []
                    for (index, item) in items.enumerated() {
                        guard case .string(let text) = item, !text.isEmpty, !text.contains(" ") else {
                            throw fail("\(key).\(name)[\(index)]", "expected a non-empty string without spaces")
                        }
                        values.insert(text)
                    }
                    return values
                case let other?: throw fail("\(key).\(name)", "expected an array of strings, got \(other.typeName)")
                }
            }
            return ClientCredentialsPolicy(
                scopes: try list("scopes"), audiences: try list("audience"), resources: try list("resource"))
        case let other?:
            throw fail(key, "expected an object of scopes, audience and resource lists, got \(other.typeName)")
        }
    }
}
