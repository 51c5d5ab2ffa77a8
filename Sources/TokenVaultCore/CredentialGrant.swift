import Foundation

/// How the vault obtains a credential's tokens by itself, with nobody signing in, and asks again
/// before each expiry instead of a refresh: an OAuth 2.0 client credentials grant (RFC 6749
/// section 4.4) at the credential's provider instance, or an RFC 8693 token exchange of another
/// credential's access token (a derived token kept as a credential of its own, because a caller
/// asked for that). Not secret: the client's secret or key is the instance's, and the subject
/// is named, never held, so the grant is stored in a plain column and shown.
public struct CredentialGrant: Sendable, Hashable, Codable {
    /// The grants the vault can make on its own.
    public enum GrantType: String, Sendable, Codable, CaseIterable {
        case clientCredentials = "client_credentials"
        case tokenExchange = "token_exchange"
    }

    public var type: GrantType
    /// `scope`, space-separated on the wire.
    public var scopes: [String]
    /// `audience`, as servers such as Auth0 and Okta ask for it (repeated when several).
    public var audiences: [String]
    /// `resource` (RFC 8707), repeated when several.
    public var resources: [String]
    /// A token exchange's subject: the credential whose current access token is exchanged.
    public var subject: CredentialID?
    /// A token exchange's `requested_token_type`; nil: the server's choice.
    public var requestedTokenType: String?
    /// When the subject credential was created, as the put found it: a subject removed and
    /// stored again (by someone else, maybe) is another credential, and is not exchanged. Kept in
    /// the stored grant only, not shown.
    public var subjectCreatedAt: Timestamp?

    public init(
        type: GrantType = .clientCredentials, scopes: [String] = [], audiences: [String] = [], resources: [String] = [],
        subject: CredentialID? = nil, requestedTokenType: String? = nil, subjectCreatedAt: Timestamp? = nil
    ) {
        self.type = type
        self.scopes = scopes
        self.audiences = audiences
        self.resources = resources
        self.subject = subject
        self.requestedTokenType = requestedTokenType
        self.subjectCreatedAt = subjectCreatedAt
    }

    private enum CodingKeys: String, CodingKey {
        case type, scopes, subject
        case audiences = "audience"
        case resources = "resource"
        case requestedTokenType = "requested_token_type"
        case subjectCreatedAt = "subject_created_at"
    }

    /// A token exchange grant's request, as a caller's exchange would make it.
    public var exchange: TokenExchangeRequest {
        TokenExchangeRequest(
            audiences: audiences, resources: resources, scopes: scopes, requestedTokenType: requestedTokenType)
    }

    /// The stored form of a grant, as the database column and the retained rows hold it: keys
    /// sorted, no whitespace. (The API's metadata writes its own, without `subject_created_at`.)
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings, numbers and lists of strings only: encoding cannot fail.
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
