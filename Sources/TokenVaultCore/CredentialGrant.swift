import Foundation

/// How the vault obtains a credential's tokens by itself, with nobody signing in: an OAuth 2.0
/// client credentials grant (RFC 6749 section 4.4) at the credential's provider instance, asked
/// again before each expiry instead of a refresh. Not secret: the client's secret or key is the
/// instance's, never the credential's, so the grant is stored in a plain column and shown.
public struct CredentialGrant: Sendable, Hashable, Codable {
    /// The grants the vault can make on its own.
    public enum GrantType: String, Sendable, Codable, CaseIterable {
        case clientCredentials = "client_credentials"
    }

    public var type: GrantType
    /// `scope`, space-separated on the wire.
    public var scopes: [String]
    /// `audience`, as servers such as Auth0 and Okta ask for it (repeated when several).
    public var audiences: [String]
    /// `resource` (RFC 8707), repeated when several.
    public var resources: [String]

    public init(
        type: GrantType = .clientCredentials, scopes: [String] = [], audiences: [String] = [], resources: [String] = []
    ) {
        self.type = type
        self.scopes = scopes
        self.audiences = audiences
        self.resources = resources
    }

    private enum CodingKeys: String, CodingKey {
        case type, scopes
        case audiences = "audience"
        case resources = "resource"
    }

    /// The one JSON form of a grant, as the database column, the retained rows and the API's
    /// metadata hold it: keys sorted, no whitespace.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings and arrays of strings only: encoding cannot fail.
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// A grant read back from its JSON form; nil for text that is not one.
    public init?(json: String) {
        guard let grant = try? JSONDecoder().decode(Self.self, from: Data(json.utf8)) else { return nil }
        self = grant
    }
}

extension TokenProvider {
    /// The client credentials grant at the provider's token endpoint; a kind without it refuses.
    public func obtain(_ request: GrantRequest) async throws(ProviderFailure) -> TokenPayload {
        throw ProviderFailure(
            kind: .misconfigured, code: .grantNotSupported,
            message: "provider instance \(name) cannot obtain tokens by a client credentials grant "
                + "(it is an oauth2 instance's)")
    }
}
